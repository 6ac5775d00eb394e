#!/usr/bin/env node
// Reference pipeline for bench/pipeline (DESIGN §9 steps 1–3), built from the
// upstream pieces: the same ffmpeg decode as adapters/audio, essentia.js
// (Essentia compiled to WebAssembly) for the MusiCNN features, and
// onnxruntime-node for the backbone and the nine heads.
//
// Usage:
//   node reference.js --models DIR [--batch 8] [--no-cpu-arena] [--features-dir DIR] FILE...
//
// For each FILE, timed separately, on the wall clock (decodeMs, …) and in
// CPU time (decodeCpuMs, …: this process's threads, plus ffmpeg's for the
// decode, measured by /usr/bin/time):
//   decode     ffmpeg, the exact command of adapters/audio.Decode with its
//              defaults (16 kHz mono f32le, channel average, first 1800 s),
//              read from a pipe;
//   features   frames cut as Essentia's FrameCutter does in
//              TensorflowPredictMusiCNN (frameSize 512, hopSize 256,
//              startFromZero=false; the port of test/oracle/musicnn.js, since
//              essentia.js's FrameGenerator drops silent frames), only the
//              frames the complete patches use; essentia.js
//              TensorflowInputMusiCNN per frame; patches of 187 frames every
//              93 frames, an incomplete last patch discarded;
//   inference  backbone msd-musicnn-1.onnx and the 9 heads, in batches of
//              --batch patches, intraOpNumThreads 1, interOpNumThreads 1,
//              everything else at onnxruntime-node's defaults (CPU memory
//              arena on, unless --no-cpu-arena: adapters/gpu turns it off).
// Model loading and a warm-up (one batch of zeros, one frame) come before
// the timed part, as in a long-running worker.
//
// With --features-dir, the patches of file i are written to DIR/i.f32
// (little-endian float32, patches x 187 x 96), outside the timed part.
//
// Stdout: one JSON object: {essentia, onnxruntime, loadMs, peakRssKiB,
// files: [{path, samples, sha256 (of the decoded f32le bytes), patches,
// decodeMs, featuresMs, inferenceMs, decodeCpuMs, featuresCpuMs,
// inferenceCpuMs, msd: [[50]...], heads: {stem: [[2]...]}}]}.
'use strict';

const fs = require('fs');
const path = require('path');
const crypto = require('crypto');
const { spawn } = require('child_process');
const { Essentia, EssentiaWASM } = require('essentia.js');
const ort = require('onnxruntime-node');

const SAMPLE_RATE = 16000;
const MAX_SECONDS = 30 * 60; // adapters/audio DefaultMaxSeconds
const FRAME_SIZE = 512;
const HOP_SIZE = 256;
const BANDS = 96;
const PATCH_FRAMES = 187;
const PATCH_HOP = 93;
const PATCH_SIZE = PATCH_FRAMES * BANDS;
const HEADS = ['danceability', 'gender', 'mood_aggressive', 'mood_happy', 'mood_party',
  'mood_relaxed', 'mood_sad', 'tonal_atonal', 'voice_instrumental'];

function parseArgs(argv) {
  const o = { models: null, batch: 8, featuresDir: null, cpuArena: true, files: [] };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--models') o.models = argv[++i];
    else if (a === '--batch') o.batch = parseInt(argv[++i], 10);
    else if (a === '--features-dir') o.featuresDir = argv[++i];
    else if (a === '--no-cpu-arena') o.cpuArena = false;
    else if (a.startsWith('--')) throw new Error(`unknown option ${a}`);
    else o.files.push(a);
  }
  if (!o.models || o.files.length === 0 || !(o.batch > 0)) {
    throw new Error('usage: node reference.js --models DIR [--batch 8] [--no-cpu-arena] [--features-dir DIR] FILE...');
  }
  return o;
}

const ms = (t0) => Number(process.hrtime.bigint() - t0) / 1e6;
// cpuMs is this process's CPU time (user + system, every thread) since c0,
// a process.cpuUsage() value.
const cpuMs = (c0) => { const d = process.cpuUsage(c0); return (d.user + d.system) / 1e3; };

// decode runs adapters/audio's ffmpeg command and returns the raw f32le
// bytes and ffmpeg's CPU time in ms (user + system, from /usr/bin/time).
function decode(file) {
  const abs = path.resolve(file);
  const args = ['-nostdin', '-hide_banner', '-v', 'error', '-protocol_whitelist', 'file',
    '-i', 'file:' + abs, '-map', 'a:0', '-ac', '1', '-ar', String(SAMPLE_RATE),
    '-rematrix_maxval', '1', '-t', String(MAX_SECONDS), '-f', 'f32le', '-'];
  return new Promise((resolve, reject) => {
    const p = spawn('/usr/bin/time', ['-f', 'NOMARR_CPU %U %S', 'ffmpeg', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    const chunks = [];
    let err = '';
    p.stdout.on('data', (c) => chunks.push(c));
    p.stderr.on('data', (c) => { err += c; });
    p.on('error', reject);
    p.on('close', (code) => {
      const m = /NOMARR_CPU (\S+) (\S+)\s*$/.exec(err);
      if (m) err = err.slice(0, m.index);
      if (code !== 0) reject(new Error(`ffmpeg exited ${code} on ${file}: ${err.trim()}`));
      else resolve({ raw: Buffer.concat(chunks), cpuMs: m ? (Number(m[1]) + Number(m[2])) * 1e3 : NaN });
    });
  });
}

// toFloat32 views (or, when misaligned, copies) f32le bytes as samples.
function toFloat32(buf) {
  const n = buf.length >> 2;
  if (buf.byteOffset % 4 === 0) return new Float32Array(buf.buffer, buf.byteOffset, n);
  return new Float32Array(buf.buffer.slice(buf.byteOffset, buf.byteOffset + 4 * n));
}

// frameAt is frame k of FrameCutter (standard mode, startFromZero=false,
// validFrameThresholdRatio=0, lastFrameToEndOfFile=false): it starts at
// -(frameSize+1)/2 + k*hop, zero outside the signal (test/oracle/musicnn.js
// cutFrames, which checks it against essentia.js's FrameGenerator).
function frameAt(signal, k, out) {
  const start = -Math.trunc((FRAME_SIZE + 1) / 2) + k * HOP_SIZE;
  out.fill(0);
  const lo = Math.max(0, start);
  const hi = Math.min(signal.length, start + FRAME_SIZE);
  if (hi > lo) out.set(signal.subarray(lo, hi), lo - start);
  return out;
}

// frameCount is how many frames FrameCutter cuts: ceil(n/hop)+1 (the last
// one is the first whose centre is at or past the end), 0 for no samples.
function frameCount(n) {
  return n <= 0 ? 0 : Math.ceil(n / HOP_SIZE) + 1;
}

function patchCount(frames) {
  return frames < PATCH_FRAMES ? 0 : Math.floor((frames - PATCH_FRAMES) / PATCH_HOP) + 1;
}

// features returns {patches: Float32Array(n*187*96), n}.
function features(essentia, signal) {
  const n = patchCount(frameCount(signal.length));
  if (n === 0) return { patches: new Float32Array(0), n };
  const used = (n - 1) * PATCH_HOP + PATCH_FRAMES;
  const bands = new Float32Array(used * BANDS);
  const frame = new Float32Array(FRAME_SIZE);
  for (let k = 0; k < used; k++) {
    const vec = essentia.arrayToVector(frameAt(signal, k, frame));
    const out = essentia.TensorflowInputMusiCNN(vec).bands;
    const b = essentia.vectorToArray(out);
    if (b.length !== BANDS) throw new Error(`frame ${k}: ${b.length} bands`);
    bands.set(b, k * BANDS);
    out.delete();
    vec.delete();
  }
  const patches = new Float32Array(n * PATCH_SIZE);
  for (let p = 0; p < n; p++) {
    patches.set(bands.subarray(p * PATCH_HOP * BANDS, p * PATCH_HOP * BANDS + PATCH_SIZE), p * PATCH_SIZE);
  }
  return { patches, n };
}

// Models holds the sessions; predict runs n patches in batches.
class Models {
  static async load(dir, batch, cpuArena) {
    const opts = { intraOpNumThreads: 1, interOpNumThreads: 1, executionMode: 'sequential', enableCpuMemArena: cpuArena };
    const m = new Models();
    m.batch = batch;
    m.backbone = await ort.InferenceSession.create(path.join(dir, 'msd-musicnn-1.onnx'), opts);
    m.heads = [];
    for (const h of HEADS) {
      m.heads.push(await ort.InferenceSession.create(path.join(dir, `${h}-msd-musicnn-1.onnx`), opts));
    }
    return m;
  }

  async predict(patches, n) {
    const msd = [];
    const heads = Object.fromEntries(HEADS.map((h) => [h, []]));
    for (let start = 0; start < n; start += this.batch) {
      const k = Math.min(this.batch, n - start);
      const input = new ort.Tensor('float32', patches.subarray(start * PATCH_SIZE, (start + k) * PATCH_SIZE),
        [k, PATCH_FRAMES, BANDS]);
      const out = await this.backbone.run({ melspectrogram: input });
      const act = out.activations.data;
      for (let i = 0; i < k; i++) msd.push(act.subarray(i * 50, (i + 1) * 50));
      for (let h = 0; h < HEADS.length; h++) {
        const ho = await this.heads[h].run({ embeddings: out.embeddings });
        const d = ho.activations.data;
        for (let i = 0; i < k; i++) heads[HEADS[h]].push(d.subarray(i * 2, (i + 1) * 2));
      }
    }
    return { msd, heads };
  }
}

function peakRssKiB() {
  const m = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync('/proc/self/status', 'utf8'));
  return m ? Number(m[1]) : null;
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const t0 = process.hrtime.bigint();
  const essentia = new Essentia(EssentiaWASM);
  const models = await Models.load(o.models, o.batch, o.cpuArena);
  const loadMs = ms(t0);
  // Warm-up: one batch of zero patches, one frame.
  {
    const z = new Float32Array(o.batch * PATCH_SIZE);
    await models.predict(z, o.batch);
    features(essentia, new Float32Array(3 * SAMPLE_RATE));
  }
  const files = [];
  for (let i = 0; i < o.files.length; i++) {
    const file = o.files[i];
    let t = process.hrtime.bigint();
    let c = process.cpuUsage();
    const { raw, cpuMs: ffmpegCpuMs } = await decode(file);
    const signal = toFloat32(raw);
    const decodeMs = ms(t);
    const decodeCpuMs = cpuMs(c) + ffmpegCpuMs;
    t = process.hrtime.bigint();
    c = process.cpuUsage();
    const { patches, n } = features(essentia, signal);
    const featuresMs = ms(t);
    const featuresCpuMs = cpuMs(c);
    t = process.hrtime.bigint();
    c = process.cpuUsage();
    const pred = n > 0 ? await models.predict(patches, n) : { msd: [], heads: {} };
    const inferenceMs = ms(t);
    const inferenceCpuMs = cpuMs(c);
    if (o.featuresDir) {
      fs.writeFileSync(path.join(o.featuresDir, `${i}.f32`),
        Buffer.from(patches.buffer, patches.byteOffset, patches.byteLength));
    }
    files.push({
      path: file, samples: signal.length,
      sha256: crypto.createHash('sha256').update(raw).digest('hex'),
      patches: n, decodeMs, featuresMs, inferenceMs, decodeCpuMs, featuresCpuMs, inferenceCpuMs,
      msd: pred.msd.map((r) => Array.from(r)),
      heads: Object.fromEntries(Object.entries(pred.heads).map(([h, rows]) => [h, rows.map((r) => Array.from(r))])),
    });
  }
  process.stdout.write(JSON.stringify({
    essentia: essentia.version, onnxruntime: ort.env.versions?.common ?? null,
    loadMs, peakRssKiB: peakRssKiB(), files,
  }) + '\n');
}

main().catch((err) => {
  // Keep the message short: the wasm bundle's source is one huge line.
  const msg = err && err.stack ? err.stack.split('\n').slice(0, 3).join('\n') : String(err);
  process.stderr.write(`reference.js: ${msg}\n`);
  process.exit(1);
});
