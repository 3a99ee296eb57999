// The agent page's run-state badge, live: one WebSocket to the console (joined to the API's WebSocket as the
// signed-in key), `subscribe`, and this agent's run events — running while a run it started has not finished.
// Without this script the badge shows the state when the page was made.  No framework.
"use strict";
(() => {
  const badge = document.getElementById("run-state");
  if (!badge || !window.WebSocket) return;
  const agentId = badge.dataset.agentId;
  const runs = new Set();
  let retry = 1000;

  const show = (state, text) => { badge.dataset.state = state; badge.textContent = text; };
  const onEvent = (message) => {
    if (!message.agent || message.agent.id !== agentId) return;
    const run = (message.run && message.run.id) || "";
    if (message.event === "agent.run.started") { runs.add(run); show("running", "Running"); }
    else if (message.event === "agent.run.finished") {
      runs.delete(run);
      if (runs.size === 0) show("idle", "Idle");
    }
  };

  const connect = () => {
    const scheme = location.protocol === "https:" ? "wss:" : "ws:";
    const socket = new WebSocket(`${scheme}//${location.host}/console/events/ws`);
    socket.addEventListener("open", () => socket.send(JSON.stringify({ id: 1, method: "subscribe" })));
    socket.addEventListener("message", (frame) => {
      const message = JSON.parse(frame.data);
      if (message.id === 1 && message.result) { retry = 1000; badge.dataset.live = "true"; }
      else if (message.event) onEvent(message);
    });
    socket.addEventListener("close", (event) => {
      badge.dataset.live = "false";
      if (event.code === 4401) { show("signed-out", "Unknown (signed out)"); return; }
      setTimeout(connect, retry);
      retry = Math.min(retry * 2, 30000);
    });
  };
  connect();
})();
