// Library: search, filters, sorting and server-side paging of the files
// (GET /api/v1/library); the query lives in the page's URL.
import {get, el, showError, scoreLabel, fmt} from "./api.js";

const statuses = ["", "tagged", "failed", "pending", "missing"];
const moods = ["", "aggressive", "happy", "party", "relaxed", "sad"];
const tiers = ["loose", "regular", "strict"];

export async function render(root, params) {
  const q = new URLSearchParams(params);
  const limit = Number(q.get("limit") || 50);
  const offset = Number(q.get("offset") || 0);

  const input = (name, attrs) => el("input", Object.assign({name, value: q.get(name) || ""}, attrs));
  const select = (name, opts) => {
    const s = el("select", {name}, opts.map(o => el("option", {value: o}, o || "any")));
    s.value = q.get(name) || opts[0];
    return s;
  };
  const scoreKey = el("select", {name: "score_key"}, el("option", {value: ""}, "—"));
  const [sk, smin, smax] = (q.get("score") || "::").split(":");
  const form = el("form", {class: "filters card", id: "filters"},
    el("label", {}, "Search", input("q", {type: "search", placeholder: "path, artist, title, album", size: 30})),
    el("label", {}, "Status", select("status", statuses)),
    el("label", {}, "Mood", select("mood", moods)),
    el("label", {}, "Tier", select("tier", tiers)),
    el("label", {}, "Genre / top tag", input("genre", {size: 12, placeholder: "rock"})),
    el("label", {}, "Score", scoreKey),
    el("label", {}, "min", el("input", {name: "score_min", type: "number", step: "0.05", min: 0, max: 1, value: smin || "", size: 4})),
    el("label", {}, "max", el("input", {name: "score_max", type: "number", step: "0.05", min: 0, max: 1, value: smax || "", size: 4})),
    el("button", {class: "primary", type: "submit"}, "Apply"),
    el("button", {type: "button", onclick: () => go(new URLSearchParams())}, "Clear"));
  form.addEventListener("submit", e => {
    e.preventDefault();
    const fd = new FormData(form), n = new URLSearchParams();
    for (const k of ["q", "status", "mood", "tier", "genre"]) if (fd.get(k)) n.set(k, fd.get(k));
    if (n.get("tier") === "loose") n.delete("tier");
    if (fd.get("score_key")) {
      n.set("score", fd.get("score_key") + ":" + (fd.get("score_min") || 0) + ":" + (fd.get("score_max") || 1));
    }
    for (const k of ["sort", "order"]) if (q.get(k)) n.set(k, q.get(k));
    go(n);
  });
  root.append(el("h1", {}, "Library"), form);

  const api = new URLSearchParams(q);
  api.set("limit", limit);
  api.set("offset", offset);
  let page;
  try {
    page = await get("/api/v1/library?" + api);
  } catch (e) {
    showError(e);
    return;
  }
  const keys = new Set(sk ? [sk] : []);
  for (const f of page.files) for (const k of Object.keys(f.scores)) keys.add(k);
  for (const k of [...keys].sort()) scoreKey.append(el("option", {value: k}, scoreLabel(k)));
  scoreKey.value = sk || "";

  const sort = q.get("sort") || "path", desc = q.get("order") === "desc";
  const sortBy = key => {
    const n = new URLSearchParams(q);
    n.set("sort", key);
    if (sort === key && !desc) n.set("order", "desc"); else n.delete("order");
    n.delete("offset");
    go(n);
  };
  const th = (label, key, cls) => el("th", {class: "sort " + (cls || ""), onclick: () => sortBy(key), title: "sort"},
    label + (sort === key ? (desc ? " ▼" : " ▲") : ""));
  const shown = sk || [...keys].find(k => k.startsWith("happy_")) || [...keys][0];
  const rows = page.files.map(f => el("tr", {"data-key": f.key},
    el("td", {class: "path", title: f.path}, el("a", {href: "/track?key=" + encodeURIComponent(f.key)}, f.title || f.path),
      f.artist || f.album ? el("div", {class: "muted credits"}, [f.artist, f.album].filter(Boolean).join(" — ")) : null),
    el("td", {class: "st-" + f.status}, f.status),
    el("td", {}, f.moods.map(m => el("span", {class: "chip"}, m))),
    el("td", {}, (f.genres.length ? f.genres : f.top_tags.slice(0, 2)).map(g => el("span", {class: "chip"}, g))),
    el("td", {class: "n"}, shown && f.scores[shown] != null ? fmt(f.scores[shown]) : ""),
    el("td", {}, f.tagged_at ? new Date(f.tagged_at).toLocaleString() : "")));
  const table = el("table", {id: "files"},
    el("thead", {}, el("tr", {}, th("File", "path"), th("Status", "status"), el("th", {}, "Moods"), el("th", {}, "Genres"),
      shown ? th(scoreLabel(shown), shown, "n") : el("th", {}, "Score"), th("Tagged", "tagged_at"))),
    el("tbody", {}, rows.length ? rows : el("tr", {}, el("td", {colspan: 6, class: "muted"}, "No files match."))));

  const step = n => { const p = new URLSearchParams(q); p.set("offset", Math.max(0, n)); go(p); };
  const last = Math.min(offset + page.files.length, page.total);
  const pager = el("div", {class: "pager"},
    el("button", {id: "prev", disabled: offset === 0, onclick: () => step(offset - limit)}, "← Previous"),
    el("span", {id: "count"}, page.total ? `${offset + 1}–${last} of ${page.total}` : "0 files"),
    el("button", {id: "next", disabled: offset + limit >= page.total, onclick: () => step(offset + limit)}, "Next →"));
  root.append(pager, table);
}

function go(params) {
  const s = params.toString();
  location.href = location.pathname + (s ? "?" + s : "");
}
