// Track: one file's status, failures, every score as a bar, every tag,
// an audio preview and the tracks that sound like it.
import {get, el, showError, scoreLabel, fmt, HTTPError} from "./api.js";

export async function render(root, params) {
  const key = params.get("key") || "";
  let d;
  try {
    d = await get("/api/v1/files/" + encodeURIComponent(key));
  } catch (e) {
    showError(e);
    return;
  }
  const f = d.file;
  const when = t => (t ? new Date(t).toLocaleString() : "—");
  root.append(
    el("h1", {}, f.title || f.path.split("/").pop()),
    el("div", {class: "card"}, el("dl", {id: "status"},
      el("dt", {}, "Path"), el("dd", {}, f.path),
      f.artist ? [el("dt", {}, "Artist"), el("dd", {id: "artist"}, f.artist)] : null,
      f.album ? [el("dt", {}, "Album"), el("dd", {id: "album"}, f.album)] : null,
      f.duration_ms ? [el("dt", {}, "Duration"), el("dd", {}, duration(f.duration_ms))] : null,
      el("dt", {}, "Status"), el("dd", {class: "st-" + f.status}, f.status),
      el("dt", {}, "Tagged"), el("dd", {}, when(f.tagged_at), f.tagged_version ? " (models " + f.tagged_version + ")" : ""),
      el("dt", {}, "Attempts"), el("dd", {}, f.attempts + " failed, " + f.crash_count + " worker crashes"),
      f.last_error ? [el("dt", {}, "Last error"), el("dd", {class: "st-failed"}, f.last_error)] : null,
      f.next_retry_at ? [el("dt", {}, "Retry at"), el("dd", {}, when(f.next_retry_at))] : null,
      el("dt", {}, "Moods"), el("dd", {}, f.moods.length ? f.moods.map(m => el("span", {class: "chip"}, m)) : "—"),
      el("dt", {}, "Genres"), el("dd", {}, f.genres.length ? f.genres.map(m => el("span", {class: "chip"}, m)) : "—"))),
  );
  const audio = el("audio", {controls: true, preload: "none", id: "preview"});
  root.append(audio);
  // An <audio> element sends no API token: it plays a signed URL the
  // server issues to this (authenticated) call, valid for 30 minutes.
  get("/api/v1/files/" + encodeURIComponent(key) + "/audio-url").then(u => { audio.src = u.url; }).catch(showError);

  const keys = Object.keys(f.scores).sort();
  root.append(el("h2", {}, "Scores"), el("div", {class: "card", id: "scores"},
    keys.length ? keys.map(k => el("div", {class: "bar"}, el("span", {class: "k", title: k}, scoreLabel(k)),
      el("div", {class: "track"}, el("div", {class: "fill", style: "width:" + Math.round(f.scores[k] * 100) + "%"})),
      el("span", {class: "n"}, fmt(f.scores[k])))) : el("p", {class: "muted"}, "Not tagged yet.")));

  const sim = el("div", {class: "card", id: "similar"}, el("p", {class: "muted"}, "loading…"));
  root.append(el("h2", {}, "Similar tracks"), sim);
  const tags = Object.keys(d.tags).sort();
  root.append(el("h2", {}, "Tags"), el("table", {id: "tags"}, el("tbody", {},
    tags.map(k => el("tr", {}, el("th", {}, k), el("td", {}, d.tags[k]))))));
  similar(sim, key);
}

async function similar(box, key) {
  try {
    const d = await get("/api/v1/similar?file=" + encodeURIComponent(key) + "&n=10");
    const list = Array.isArray(d) ? d : d.tracks || d.similar || d.results || [];
    box.replaceChildren(list.length ? el("ol", {}, list.map(t => el("li", {},
      el("a", {href: "/track?key=" + encodeURIComponent(t.key || t.file)}, t.path || t.key || t.file),
      t.score != null ? el("span", {class: "muted"}, " " + fmt(t.score)) : null,
      t.distance != null ? el("span", {class: "muted"}, " distance " + fmt(t.distance)) : null))) :
      el("p", {class: "muted"}, "No similar tracks yet."));
  } catch (e) {
    box.replaceChildren(el("p", {class: "muted"}, e instanceof HTTPError && (e.status === 404 || e.status === 503) ?
      "No similar tracks yet." : "Similar tracks unavailable: " + e.message));
  }
}

function duration(ms) {
  const s = Math.round(ms / 1000);
  return Math.floor(s / 60) + ":" + String(s % 60).padStart(2, "0");
}
