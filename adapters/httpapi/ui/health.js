// Health: the workers of today (GET /api/v1/info, every 2 s), a status
// timeline per worker from the health history, the kills, restarts and
// quarantines, and the pause, resume and reset buttons.
import {get, post, el, showError} from "./api.js";
import {timeline} from "./charts.js";

const secs = ms => (ms < 0 ? "never" : (ms / 1000).toFixed(1) + " s ago");

export async function render(root) {
  const meta = el("div", {id: "meta", class: "muted"}, "loading…");
  const warn = el("div", {id: "warn", class: "st-failed"});
  const events = el("div", {id: "events", class: "muted"});
  const lib = el("tr", {id: "lib"});
  const workers = el("tbody", {id: "workers"});
  const state = el("strong", {id: "enabled"}, "?");
  const act = (path, label, id) => el("button", {id, onclick: async () => {
    try { await post(path); showError(null); await tick(); } catch (e) { showError(e); }
  }}, label);
  const tl = el("div", {class: "card", id: "history"}, el("p", {class: "muted"}, "loading…"));
  root.append(el("h1", {}, "Health"), meta, warn, events,
    el("div", {class: "card"}, "Workers are ", state, " ", act("/api/v1/workers/pause", "Pause", "pause"), " ",
      act("/api/v1/workers/resume", "Resume", "resume"), " ", act("/api/v1/workers/reset", "Reset failed workers", "reset")),
    el("h2", {}, "Library"),
    el("table", {}, el("thead", {}, el("tr", {}, ["total", "tagged", "failed", "pending", "claimed", "not valid"].map(h => el("th", {class: "n"}, h)))),
      el("tbody", {}, lib)),
    el("h2", {}, "Workers"),
    el("table", {}, el("thead", {}, el("tr", {}, ["component", "status", "phase", "current job", "pid", "restarts", "kills", "deaths",
      "last frame", "files", "errors", "conflicts", "avg", "reason", ""].map(h => el("th", {}, h)))), workers),
    el("h2", {}, "Status over time"), tl);

  async function tick() {
    let d;
    try {
      d = await get("/api/v1/info");
    } catch (e) {
      showError(e);
      return;
    }
    showError(null);
    const down = !!d.store_error; // counts and the pause flag are unknown, not 0
    meta.textContent = [d.instance, d.version, d.store].join(" · ");
    state.textContent = down ? "unknown (store unavailable)" : d.worker_enabled ? "running" : "paused";
    state.className = d.worker_enabled && !down ? "healthy" : "failed";
    const w = [];
    if (down) w.push("STORE UNAVAILABLE: " + d.store_error);
    if (d.store_writes_failing) w.push("store writes failing since " + new Date(d.store_writes_failing.since).toLocaleString() + ": " + d.store_writes_failing.error);
    if (d.clock_skew && d.clock_skew !== "ok") w.push("clock " + d.clock_skew + ": " + (Math.abs(d.clock_offset_ms) / 1000).toFixed(1) + " s off the store server's; sync with NTP");
    const ms = d.model_sets;
    if (ms && ms.held_back) w.push("re-tagging held back" + (ms.held_by && ms.held_by.length ? " by " + ms.held_by.join(", ") : ""));
    warn.textContent = w.join(" · ");
    const removed = Object.values(d.claims_released || {}).reduce((s, n) => s + n, 0);
    events.textContent = "since the daemon started: " + d.files_quarantined + " files quarantined, " + removed + " claims removed";
    lib.replaceChildren(...["total", "tagged", "failed", "pending", "claimed", "invalid"].map(k => el("td", {class: "n"}, down ? "?" : d.library[k])));
    workers.replaceChildren(...d.workers.map(x => {
      const kills = Object.entries(x.kills || {}).filter(([, n]) => n > 0);
      return el("tr", {"data-component": x.component},
        el("td", {}, x.component), el("td", {class: x.status}, x.status), el("td", {}, x.phase || ""),
        el("td", {class: "path", title: x.current_path || x.current_job || ""}, x.current_path || x.current_job || ""),
        el("td", {class: "n"}, x.pid || ""), el("td", {class: "n"}, x.restarts),
        el("td", {class: "n", title: kills.map(([c, n]) => c + " " + n).join(", ")}, kills.reduce((s, [, n]) => s + n, 0)),
        el("td", {class: "n"}, x.deaths), el("td", {class: "n"}, secs(x.last_frame_age_ms)),
        el("td", {class: "n"}, x.files_processed), el("td", {class: "n"}, x.errors), el("td", {class: "n"}, x.claim_conflicts),
        el("td", {class: "n"}, (x.avg_processing_ms / 1000).toFixed(2) + " s"), el("td", {}, x.failure_reason || ""),
        el("td", {}, x.status === "failed" ? act("/api/v1/workers/" + encodeURIComponent(x.component) + "/reset", "Reset") : null));
    }));
  }

  async function history() {
    try {
      const d = await get("/api/v1/health/history?limit=5000");
      const rows = {};
      for (const r of d.history) {
        const t = Date.parse(r.at), pts = (rows[r.component] = rows[r.component] || []);
        if (!pts.length || pts[pts.length - 1].status !== r.status) pts.push({t, status: r.status});
      }
      const ts = d.history.map(r => Date.parse(r.at));
      tl.replaceChildren(d.history.length ? timeline(rows, Math.min(...ts), Math.max(...ts, Date.now())) :
        el("p", {class: "muted"}, "No health history yet."));
    } catch (e) {
      tl.replaceChildren(el("p", {class: "muted"}, "Health history unavailable: " + e.message));
    }
  }

  await tick();
  await history();
  setInterval(tick, 2000);
  setInterval(history, 15000);
}
