// The web chat page: sign in with an API key, pick an agent, talk to it, watch the organization's live
// agent events.  No build step: plain JavaScript against the gateway's HTTP and WebSocket APIs.
"use strict";

// The runtime's HTTP chat endpoint: {"text", "conversation", "stream": true} -> server-sent events: "delta"
// {"text"} per piece of the reply, then "reply" {"reply", "session_key"} or "error" {"error": {…, "status"}}.
const MESSAGES_PATH = "/v1/agents/{agent}/messages";

const state = { key: null, agent: null, socket: null, conversation: "web:" + randomId() };
const $ = (id) => document.getElementById(id);

function randomId() {
  const bytes = new Uint8Array(12);
  crypto.getRandomValues(bytes);
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

function say(text) { $("status").textContent = text; }

async function api(method, path, body) {
  const response = await fetch(path, {
    method,
    headers: Object.assign({ Authorization: "Bearer " + state.key },
                           body === undefined ? {} : { "Content-Type": "application/json" }),
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const data = await response.json().catch(() => ({}));
  if (!response.ok) {
    const message = (data.error && data.error.message) || response.statusText;
    throw new Error(response.status + " " + message);
  }
  return data;
}

function failure(status, data, fallback) {
  const message = (data && data.error && data.error.message) || fallback;
  return new Error(status + " " + message);
}

// POST a message with stream: true; onDelta gets each piece, the reply body is returned, a failure thrown
// (before the stream: the HTTP error; during it: the "error" event).
async function streamMessage(path, body, onDelta) {
  const response = await fetch(path, {
    method: "POST",
    headers: { Authorization: "Bearer " + state.key, "Content-Type": "application/json" },
    body: JSON.stringify(Object.assign({ stream: true }, body)),
  });
  if (!response.ok) {
    throw failure(response.status, await response.json().catch(() => ({})), response.statusText);
  }
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) throw new Error("the answer ended before the reply");
    buffer += value;
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const fields = {};
      for (const line of buffer.slice(0, end).split("\n")) {
        const colon = line.indexOf(": ");
        if (colon > 0) fields[line.slice(0, colon)] = line.slice(colon + 2);
      }
      buffer = buffer.slice(end + 2);
      const data = JSON.parse(fields.data || "null");
      if (fields.event === "delta") onDelta(data.text);
      else if (fields.event === "reply") return data;
      else if (fields.event === "error") throw failure(data.error.status, data, "the run failed");
    }
  }
}

function append(list, className, text) {
  const item = document.createElement("li");
  item.className = className;
  item.textContent = text;
  $(list).appendChild(item);
  return item;
}

async function signIn(event) {
  event.preventDefault();
  state.key = $("api-key").value.trim();
  say("");
  try {
    const page = await api("GET", "/v1/agents?limit=1000");
    $("agents").replaceChildren();
    for (const agent of page.items) {
      const button = document.createElement("button");
      button.type = "button";
      button.textContent = agent.display_name ? agent.agent_key + " (" + agent.display_name + ")" : agent.agent_key;
      button.dataset.agent = agent.agent_key;
      button.addEventListener("click", () => choose(agent.agent_key));
      const item = document.createElement("li");
      item.appendChild(button);
      $("agents").appendChild(item);
    }
    $("sign-in").hidden = true;
    $("workspace").hidden = false;
    connectEvents();
  } catch (error) {
    say("Sign-in failed: " + error.message);
  }
}

function choose(agentKey) {
  state.agent = agentKey;
  $("chat-title").textContent = agentKey;
  $("messages").replaceChildren();
  $("chat").hidden = false;
  $("message-text").focus();
}

async function sendMessage(event) {
  event.preventDefault();
  const text = $("message-text").value;
  if (!text || !state.agent) return;
  $("message-text").value = "";
  append("messages", "msg user", text);
  let item = null;  // the agent's reply as it streams in
  try {
    const path = MESSAGES_PATH.replace("{agent}", encodeURIComponent(state.agent));
    const answer = await streamMessage(path, { text, conversation: state.conversation }, (piece) => {
      if (item === null) {
        item = append("messages", "msg agent streaming", "");
        item.dataset.pieces = "0";
      }
      item.textContent += piece;
      item.dataset.pieces = String(Number(item.dataset.pieces) + 1);
    });
    if (answer.reply && item === null) item = append("messages", "msg agent", "");
    if (item !== null) {
      if (answer.reply) item.textContent = answer.reply;  // the pieces join to it; the reply is the record
      else item.remove();
      item.classList.remove("streaming");
    }
  } catch (error) {
    // Nothing half-written stays: the failure note replaces the part of the reply already shown.
    if (item !== null) item.remove();
    append("messages", "msg error", error.message);
  }
}

function connectEvents() {
  const scheme = location.protocol === "https:" ? "wss:" : "ws:";
  const socket = new WebSocket(scheme + "//" + location.host + "/v1/ws");
  state.socket = socket;
  // Browsers cannot set headers on a WebSocket: the credential is the first message.
  socket.addEventListener("open", () => socket.send(JSON.stringify({ id: 1, method: "auth", params: { token: state.key } })));
  socket.addEventListener("message", (message) => {
    const data = JSON.parse(message.data);
    if (data.id === 1 && data.result) {
      socket.send(JSON.stringify({ id: 2, method: "subscribe" }));
    } else if (data.id === 2 && data.result) {
      $("events").dataset.subscribed = "true";
    } else if (data.event) {
      const who = data.agent ? " " + data.agent.agent_key : "";
      append("events", "event", data.event + who);
    } else if (data.error) {
      append("events", "event error", data.error.code + ": " + data.error.message);
    }
  });
  socket.addEventListener("close", () => { $("events").dataset.subscribed = "false"; });
}

$("sign-in").addEventListener("submit", signIn);
$("message-form").addEventListener("submit", sendMessage);
