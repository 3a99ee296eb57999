// The live-events page: one WebSocket to the console (joined to the API's WebSocket as the signed-in key),
// `subscribe`, and each event as a row, newest first, filtered by agent key.  No framework.
"use strict";
(() => {
  const rows = document.getElementById("events");
  const status = document.getElementById("events-status");
  const filter = document.getElementById("agent-filter");
  const MAX_ROWS = 500;
  let retry = 1000;

  const setStatus = (state, text) => { status.dataset.state = state; status.textContent = text; };
  const matches = (row) => !filter.value.trim() || (row.dataset.agentKey || "").includes(filter.value.trim());
  const applyFilter = () => { for (const row of rows.rows) row.hidden = !matches(row); };
  filter.addEventListener("input", applyFilter);

  const cell = (text) => { const td = document.createElement("td"); td.textContent = text; return td; };
  const detail = (message) => {
    if (message.run) return Object.entries(message.run).map(([k, v]) => `${k}: ${v}`).join(", ");
    if (message.agent && message.agent.previous_key) return `was ${message.agent.previous_key}`;
    if (message.count !== undefined) return `${message.count} dropped`;
    return message.reason || "";
  };

  const show = (message) => {
    const agent = message.agent || {};
    const row = document.createElement("tr");
    row.className = "event";
    row.dataset.event = message.event;
    row.dataset.agentKey = agent.agent_key || "";
    row.append(cell(new Date().toISOString().slice(11, 19)), cell(message.event), cell(agent.agent_key || ""),
               cell(agent.tenant_slug || ""), cell(detail(message)));
    row.hidden = !matches(row);
    rows.prepend(row);
    while (rows.rows.length > MAX_ROWS) rows.deleteRow(-1);
  };

  const connect = () => {
    const scheme = location.protocol === "https:" ? "wss:" : "ws:";
    const socket = new WebSocket(`${scheme}//${location.host}/console/events/ws`);
    socket.addEventListener("open", () => socket.send(JSON.stringify({ id: 1, method: "subscribe" })));
    socket.addEventListener("message", (frame) => {
      const message = JSON.parse(frame.data);
      if (message.id === 1 && message.result) { retry = 1000; setStatus("subscribed", "Subscribed: new events appear below."); }
      else if (message.error) setStatus("error", `${message.error.message} (${message.error.code})`);
      else if (message.event) show(message);
    });
    socket.addEventListener("close", (event) => {
      if (event.code === 4401) { setStatus("signed-out", "The API refused the key: sign in again."); return; }
      setStatus("reconnecting", "Disconnected; reconnecting…");
      setTimeout(connect, retry);
      retry = Math.min(retry * 2, 30000);
    });
  };
  connect();
})();
