// Charts as inline SVG, built with DOM calls (no markup from data).
const NS = "http://www.w3.org/2000/svg";

function s(tag, attrs, text) {
  const e = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text != null) e.textContent = String(text);
  return e;
}

// histogram draws counts of equal bins of [0, 1].
export function histogram(counts, w = 300, h = 120) {
  const svg = s("svg", {width: w, height: h + 16, viewBox: `0 0 ${w} ${h + 16}`, role: "img", class: "hist"});
  const max = Math.max(1, ...counts), bw = w / counts.length;
  counts.forEach((n, i) => {
    const bh = (n / max) * h;
    const r = s("rect", {x: i * bw + 1, y: h - bh, width: bw - 2, height: bh, fill: "#3b5bdb"});
    r.append(s("title", {}, `${(i / counts.length).toFixed(2)}–${((i + 1) / counts.length).toFixed(2)}: ${n}`));
    svg.append(r);
  });
  svg.append(s("line", {x1: 0, y1: h, x2: w, y2: h, stroke: "#999"}));
  for (const x of [0, 0.5, 1]) svg.append(s("text", {x: Math.min(w - 14, x * w), y: h + 12}, x));
  return svg;
}

// bars draws labelled horizontal bars, largest first.
export function bars(entries, w = 300) {
  entries = entries.slice().sort((a, b) => b[1] - a[1]);
  const rh = 18, h = Math.max(rh, entries.length * rh);
  const svg = s("svg", {width: w, height: h, viewBox: `0 0 ${w} ${h}`, role: "img", class: "bars"});
  const max = Math.max(1, ...entries.map(e => e[1]));
  entries.forEach(([label, n], i) => {
    const y = i * rh;
    svg.append(s("text", {x: 0, y: y + 12}, label));
    svg.append(s("rect", {x: 110, y: y + 3, width: Math.max(1, (n / max) * (w - 160)), height: rh - 6, fill: "#3b5bdb"}));
    svg.append(s("text", {x: 114 + (n / max) * (w - 160), y: y + 12}, n));
  });
  return svg;
}

// timeline draws one row of coloured spans per component over [t0, t1].
export function timeline(rows, t0, t1, w = 900) {
  const colour = {healthy: "#2b8a3e", pending: "#adb5bd", unhealthy: "#e8590c", failed: "#c92a2a"};
  const names = Object.keys(rows).sort(), rh = 22, lw = 130;
  const svg = s("svg", {width: w, height: names.length * rh + 18, viewBox: `0 0 ${w} ${names.length * rh + 18}`, role: "img", id: "timeline"});
  const x = t => lw + ((t - t0) / Math.max(1, t1 - t0)) * (w - lw - 4);
  names.forEach((name, i) => {
    const y = i * rh;
    svg.append(s("text", {x: 0, y: y + 14}, name));
    const pts = rows[name];
    pts.forEach((p, j) => {
      const end = j + 1 < pts.length ? pts[j + 1].t : t1;
      const r = s("rect", {x: x(p.t), y: y + 3, width: Math.max(1, x(end) - x(p.t)), height: rh - 6, fill: colour[p.status] || "#868e96"});
      r.append(s("title", {}, `${name}: ${p.status} from ${new Date(p.t).toLocaleTimeString()}`));
      svg.append(r);
    });
  });
  const yb = names.length * rh + 14;
  svg.append(s("text", {x: lw, y: yb}, new Date(t0).toLocaleTimeString()));
  svg.append(s("text", {x: w - 60, y: yb}, new Date(t1).toLocaleTimeString()));
  return svg;
}
