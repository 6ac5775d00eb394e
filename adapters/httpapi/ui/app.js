// The router: one page module per path, loaded by the shell (index.html).
import {showError} from "./api.js";

const pages = {
  "/": "library", "/library": "library", "/track": "track", "/insights": "insights",
  "/playlists": "playlists", "/health": "health",
};

async function start() {
  const name = pages[location.pathname] || "library";
  for (const a of document.querySelectorAll("#nav a")) {
    a.classList.toggle("on", a.dataset.page === name || (name === "track" && a.dataset.page === "library"));
  }
  const root = document.getElementById("app");
  try {
    const mod = await import("./" + name + ".js");
    root.replaceChildren();
    await mod.render(root, new URLSearchParams(location.search));
    document.body.dataset.ready = name;
  } catch (e) {
    showError(e);
    document.body.dataset.ready = "error";
  }
}

start();
