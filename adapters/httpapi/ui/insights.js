// Insights: per-head score histograms, mood counts per tier and genre
// counts (GET /api/v1/insights).
import {get, el, showError, scoreLabel} from "./api.js";
import {histogram, bars} from "./charts.js";

export async function render(root) {
  let d;
  try {
    d = await get("/api/v1/insights");
  } catch (e) {
    showError(e);
    return;
  }
  root.append(el("h1", {}, "Insights"), el("p", {class: "muted"}, `${d.files.toLocaleString("en-US")} files with tags.`));
  root.append(el("h2", {}, "Calibration"), calibration(d.calibration));
  const heads = Object.keys(d.histograms).sort();
  root.append(el("h2", {}, "Score distributions"), el("div", {class: "grid", id: "histograms"},
    heads.length ? heads.map(k => el("div", {class: "card"}, el("div", {}, scoreLabel(k)), histogram(d.histograms[k]))) :
      el("p", {class: "muted"}, "No scores yet: tag some files first.")));
  root.append(el("h2", {}, "Moods"), el("div", {class: "grid", id: "moods"},
    ["strict", "regular", "loose"].map(t => el("div", {class: "card"}, el("div", {}, t),
      Object.keys(d.moods[t]).length ? bars(Object.entries(d.moods[t])) : el("p", {class: "muted"}, "none")))));
  const g = Object.entries(d.genres).length ? d.genres : d.top_tags;
  root.append(el("h2", {}, Object.entries(d.genres).length ? "Genres" : "Top tags"),
    el("div", {class: "card", id: "genres"}, Object.keys(g).length ? bars(Object.entries(g).slice(0, 30), 500) :
      el("p", {class: "muted"}, "none")));
}

// calibration shows the calibration in force: the mode, why it applies
// or not, and the stored ranges per class.
function calibration(c) {
  const box = el("div", {class: "card", id: "calibration"});
  if (!c) {
    box.append(el("p", {class: "muted"}, "This server does not say which calibration is in force."));
    return box;
  }
  box.append(el("p", {}, el("strong", {id: "cal-state"}, c.in_force ? "In force" : "Not in force"), ": " + c.why + "."));
  if (!c.stored) {
    box.append(el("p", {class: "muted", id: "cal-none"}, "No calibration is stored (run nomarr calibrate once the library is tagged)."));
    return box;
  }
  const s = c.stored;
  box.append(el("p", {class: "muted"}, `Calibration ${s.id} of model set ${s.model_set}, from ${s.files.toLocaleString("en-US")} files.`));
  const keys = Object.keys(s.ranges).filter(k => !k.startsWith("not_") && !k.startsWith("non_")).sort();
  box.append(el("table", {id: "cal-ranges"}, el("thead", {}, el("tr", {}, el("th", {}, "class"), el("th", {class: "n"}, "p5 → 0"), el("th", {class: "n"}, "p95 → 1"))),
    el("tbody", {}, keys.map(k => el("tr", {}, el("td", {}, scoreLabel(k)), el("td", {class: "n"}, s.ranges[k].p5.toFixed(3)),
      el("td", {class: "n"}, s.ranges[k].p95.toFixed(3)))))));
  return box;
}
