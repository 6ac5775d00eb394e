// Playlists: a rule (moods, genre, score ranges, status) previewed as the
// files it selects (GET /api/v1/library), saved as M3U8 and NSP into the
// server's playlists_dir (POST /api/v1/playlists), and the playlists the
// server writes (GET /api/v1/playlists).
import {get, post, el, showError, scoreLabel, HTTPError} from "./api.js";

const heads = ["happy_musicnn_mood_happy", "sad_musicnn_mood_sad", "party_musicnn_mood_party", "relaxed_musicnn_mood_relaxed",
  "aggressive_musicnn_mood_aggressive", "danceable_musicnn_danceability"];

export async function render(root, params) {
  const q = new URLSearchParams(params);
  const ranges = el("div", {id: "ranges"});
  const addRange = (k = heads[0], lo = 0.5, hi = 1) => {
    const row = el("div", {class: "rule"},
      el("select", {name: "key"}, heads.map(h => el("option", {value: h}, scoreLabel(h)))),
      el("input", {name: "min", type: "number", step: "0.05", min: 0, max: 1, value: lo, size: 4}), "to",
      el("input", {name: "max", type: "number", step: "0.05", min: 0, max: 1, value: hi, size: 4}),
      el("button", {type: "button", onclick: () => row.remove()}, "✕"));
    row.querySelector("select").value = k;
    ranges.append(row);
  };
  for (const s of q.getAll("score")) { const [k, lo, hi] = s.split(":"); addRange(k, lo, hi); }
  const mood = el("select", {name: "mood"}, ["", "aggressive", "happy", "party", "relaxed", "sad"].map(m => el("option", {value: m}, m || "any")));
  mood.value = q.get("mood") || "";
  const tier = el("select", {name: "tier"}, ["loose", "regular", "strict"].map(t => el("option", {value: t}, t)));
  tier.value = q.get("tier") || "loose";
  const genre = el("input", {name: "genre", value: q.get("genre") || "", placeholder: "rock", size: 12});
  const form = el("form", {class: "card", id: "rule"},
    el("div", {class: "filters"}, el("label", {}, "Mood", mood), el("label", {}, "Tier", tier), el("label", {}, "Genre / top tag", genre)),
    el("div", {}, el("strong", {}, "Score ranges")), ranges,
    el("button", {type: "button", onclick: () => addRange()}, "+ score range"), " ",
    el("button", {class: "primary", type: "submit", id: "preview"}, "Preview"));
  form.addEventListener("submit", e => {
    e.preventDefault();
    const n = new URLSearchParams();
    if (mood.value) n.set("mood", mood.value);
    if (tier.value !== "loose") n.set("tier", tier.value);
    if (genre.value) n.set("genre", genre.value);
    for (const r of ranges.children) {
      n.append("score", r.querySelector("[name=key]").value + ":" + r.querySelector("[name=min]").value + ":" + r.querySelector("[name=max]").value);
    }
    location.href = "/playlists?" + n;
  });
  root.append(el("h1", {}, "Playlists"), form);

  const out = el("div", {id: "result"});
  root.append(out);
  if ([...q.keys()].length) {
    const api = new URLSearchParams(q);
    api.set("status", "tagged");
    api.set("limit", 100);
    try {
      const page = await get("/api/v1/library?" + api);
      out.append(el("h2", {}, `Preview: ${page.total} tracks`), el("ol", {id: "preview-list"},
        page.files.map(f => el("li", {}, el("a", {href: "/track?key=" + encodeURIComponent(f.key)}, f.title || f.path)))));
    } catch (e) {
      showError(e);
    }
  }
  if ([...q.keys()].length) out.append(saveForm(q));
  const saved = el("div", {class: "card", id: "saved"}, "loading…");
  root.append(el("h2", {}, "Playlists the server writes"), saved);
  await listSaved(saved);
}

// saveForm saves the previewed rule under a name (one score range at
// most: a playlist rule holds one).
function saveForm(q) {
  const name = el("input", {name: "name", id: "pl-name", placeholder: "Happy dance", size: 24, required: true});
  const msg = el("span", {id: "save-msg", class: "muted"});
  const form = el("form", {class: "card", id: "save"}, el("label", {}, "Save as ", name), " ",
    el("button", {class: "primary", type: "submit", id: "save-btn"}, "Save playlist"), " ", msg);
  form.addEventListener("submit", async e => {
    e.preventDefault();
    const ranges = q.getAll("score");
    if (ranges.length > 1) {
      msg.textContent = "A saved playlist takes one score range: remove the others.";
      return;
    }
    const rule = {name: name.value.trim(), mood: q.get("mood") || undefined, tier: q.get("tier") || "loose", genre: q.get("genre") || undefined};
    if (ranges.length) {
      const [k, lo, hi] = ranges[0].split(":");
      Object.assign(rule, {score: k, min: Number(lo), max: Number(hi)});
    }
    try {
      const r = await post("/api/v1/playlists", rule);
      msg.textContent = `Saved ${r.name}: ${r.tracks} tracks, ${r.file}.m3u8 and ${r.file}.nsp written.`;
      await listSaved(document.getElementById("saved"));
    } catch (err) {
      msg.textContent = err instanceof HTTPError && err.status === 503 ? "Cannot save: " + err.message : "Not saved: " + err.message;
    }
  });
  return form;
}

async function listSaved(saved) {
  try {
    const d = await get("/api/v1/playlists");
    const list = Array.isArray(d) ? d : d.playlists || [];
    saved.replaceChildren(list.length ? el("ul", {}, list.map(p => el("li", {}, p.name,
      el("span", {class: "muted"}, ` — ${p.tracks} tracks, ${p.file}.m3u8`)))) :
      el("p", {class: "muted"}, "None yet."));
  } catch (e) {
    saved.replaceChildren(el("p", {class: "muted"}, "Playlists unavailable: " + e.message));
  }
}
