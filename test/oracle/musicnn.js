#!/usr/bin/env node
// Test oracle for adapters/features: MusiCNN input features computed by
// essentia.js (Essentia compiled to WebAssembly).
//
// Usage: node musicnn.js [--frames] IN.f32 [IN2.f32 ...]
//
// Each IN.f32 holds raw little-endian float32 mono samples at 16 kHz. For
// each input the script writes IN.f32.bands: little-endian float32,
// frames x 96, row-major: Essentia's TensorflowInputMusiCNN (run in
// essentia.js) applied to every frame that Essentia's FrameCutter cuts from
// the signal with frameSize 512, hopSize 256 and every other parameter at its
// default (startFromZero=false, validFrameThresholdRatio=0,
// lastFrameToEndOfFile=false), as TensorflowPredictMusiCNN configures it.
// With --frames it also writes IN.f32.frames: those frames (frames x 512),
// so a test can check the framing sample by sample.
//
// Framing: essentia.js exposes FrameCutter only through FrameGenerator, which
// drops silent frames (mean power < 1e-10; it throws when every frame is
// silent), unlike TensorflowPredictMusiCNN, which keeps them. So the frames
// are cut by cutFrames below, a line-by-line port of the standard-mode
// FrameCutter::compute() (src/algorithms/standard/framecutter.cpp), and,
// whenever no frame is silent, checked to be identical to what
// essentia.js's FrameGenerator (the C++ FrameCutter) returns.
//
// Stdout: one JSON line per input:
// {"input": ..., "frames": n, "silentFrames": s, "frameGeneratorChecked": bool, "essentia": version}.
'use strict';

const fs = require('fs');
const { Essentia, EssentiaWASM } = require('essentia.js');

const FRAME_SIZE = 512;
const HOP_SIZE = 256;
const BANDS = 96;

function readF32(path) {
  const buf = fs.readFileSync(path);
  if (buf.length % 4 !== 0) throw new Error(`${path}: size ${buf.length} is not a multiple of 4`);
  const out = new Float32Array(buf.length / 4);
  for (let i = 0; i < out.length; i++) out[i] = buf.readFloatLE(4 * i);
  return out;
}

function writeF32(path, arr) {
  const buf = Buffer.alloc(arr.length * 4);
  for (let i = 0; i < arr.length; i++) buf.writeFloatLE(arr[i], 4 * i);
  fs.writeFileSync(path, buf);
}

// cutFrames ports FrameCutter::compute() (standard mode) with
// startFromZero=false, lastFrameToEndOfFile=false and
// validFrameThresholdRatio=0, calling it until it returns an empty frame.
function cutFrames(buffer, frameSize, hopSize) {
  const validFrameThreshold = Math.round(0 * frameSize);
  let startIndex = -Math.trunc((frameSize + 1) / 2); // C++: -(frameSize+1)/2
  let lastFrame = false;
  const frames = [];
  for (;;) {
    if (lastFrame || buffer.length === 0) break;
    if (startIndex >= buffer.length) break;
    const frame = new Float32Array(frameSize); // zero-filled
    let idxInFrame = 0;
    if (startIndex < 0) idxInFrame = Math.min(-startIndex, frameSize);
    const howmuch = Math.min(frameSize, buffer.length - startIndex) - idxInFrame;
    frame.set(buffer.subarray(startIndex + idxInFrame, startIndex + idxInFrame + howmuch), idxInFrame);
    idxInFrame += howmuch;
    if (idxInFrame < validFrameThreshold) break; // empty frame: done
    if (idxInFrame < frameSize) {
      // startFromZero=false: stop after the frame whose centre is at or past the end.
      if (startIndex + Math.trunc(frameSize / 2) >= buffer.length) lastFrame = true;
    }
    frames.push(frame);
    startIndex += hopSize;
  }
  return frames;
}

// isSilent is essentia::isSilent: mean power below 1e-10.
function isSilent(frame) {
  let e = 0;
  for (let i = 0; i < frame.length; i++) e += frame[i] * frame[i];
  return e / frame.length < 1e-10;
}

function main(argv) {
  let dumpFrames = false;
  const inputs = [];
  for (const a of argv) {
    if (a === '--frames') dumpFrames = true;
    else inputs.push(a);
  }
  if (inputs.length === 0) {
    process.stderr.write('usage: node musicnn.js [--frames] IN.f32 [IN2.f32 ...]\n');
    process.exit(2);
  }
  const essentia = new Essentia(EssentiaWASM);
  for (const path of inputs) {
    const signal = readF32(path);
    const frames = cutFrames(signal, FRAME_SIZE, HOP_SIZE);
    const n = frames.length;
    const silent = frames.filter(isSilent).length;

    let checked = false;
    if (n > 0 && silent === 0) {
      const gen = essentia.FrameGenerator(signal, FRAME_SIZE, HOP_SIZE);
      if (gen.size() !== n) {
        throw new Error(`${path}: FrameGenerator cut ${gen.size()} frames, the FrameCutter port ${n}`);
      }
      for (let k = 0; k < n; k++) {
        const v = gen.get(k);
        const g = essentia.vectorToArray(v);
        for (let i = 0; i < FRAME_SIZE; i++) {
          if (g[i] !== frames[k][i]) {
            throw new Error(`${path}: frame ${k} sample ${i}: FrameGenerator ${g[i]}, port ${frames[k][i]}`);
          }
        }
        if (typeof v.delete === 'function') v.delete();
      }
      if (typeof gen.delete === 'function') gen.delete();
      checked = true;
    }

    const bands = new Float32Array(n * BANDS);
    const raw = dumpFrames ? new Float32Array(n * FRAME_SIZE) : null;
    for (let k = 0; k < n; k++) {
      if (raw) raw.set(frames[k], k * FRAME_SIZE);
      const vec = essentia.arrayToVector(frames[k]);
      const out = essentia.TensorflowInputMusiCNN(vec).bands;
      const b = essentia.vectorToArray(out);
      if (b.length !== BANDS) throw new Error(`${path}: frame ${k}: ${b.length} bands`);
      bands.set(b, k * BANDS);
      if (typeof out.delete === 'function') out.delete();
      if (typeof vec.delete === 'function') vec.delete();
    }
    writeF32(path + '.bands', bands);
    if (raw) writeF32(path + '.frames', raw);
    process.stdout.write(JSON.stringify({
      input: path, frames: n, silentFrames: silent, frameGeneratorChecked: checked,
      essentia: essentia.version,
    }) + '\n');
  }
}

process.on('uncaughtException', (err) => {
  // Keep the message short: the wasm bundle's source is one huge line.
  const msg = err && err.stack ? err.stack.split('\n').slice(0, 3).join('\n') : String(err);
  process.stderr.write(`musicnn.js: ${msg}\n`);
  process.exit(1);
});

main(process.argv.slice(2));
