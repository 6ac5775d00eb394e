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
  root.append(el("h1", {}, "Insights"), el("p", {class: "muted"}, `${d.files} files with tags.`));
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
