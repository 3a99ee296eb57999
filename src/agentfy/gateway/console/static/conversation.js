// The conversation page's send form, streamed: POST the form (its CSRF token included) to the console's relay of
// the chat route's stream, append the reply's pieces as they arrive, then show the session as the server renders
// it (tool calls and results as such).  Without this script the form is an ordinary POST.  No framework.
"use strict";
(() => {
  const form = document.getElementById("send-form");
  if (!form || !window.fetch || !window.ReadableStream || !window.TextDecoder) return;
  const status = document.getElementById("stream-status");
  const button = form.querySelector("button[type=submit]");

  const setStatus = (state, text) => { status.dataset.state = state; status.textContent = text; };
  const element = (tag, className, text) => {
    const made = document.createElement(tag);
    if (className) made.className = className;
    if (text !== undefined) made.textContent = text;
    return made;
  };
  const view = () => document.getElementById("session-view");
  const messageList = () => {
    let list = document.getElementById("messages");
    if (!list) {
      for (const empty of view().querySelectorAll(".empty")) empty.remove();
      list = element("ol", "messages");
      list.id = "messages";
      view().append(list);
    }
    return list;
  };
  const message = (role, text) => {
    const item = element("li", `msg ${role}`);
    item.append(element("span", "role", role), element("p", "text", text));
    return item;
  };
  // The API's error as the server's error box shows it: message, code, HTTP status, the field and value.
  const showError = (error) => {
    const box = element("div", "error");
    box.setAttribute("role", "alert");
    box.id = "error";
    box.append(element("strong", "", error.message), " ",
               element("span", "code", `(${error.code}, HTTP ${error.status})`));
    if (error.field) {
      box.append(element("br"), element("span", "code", `field ${error.field}` +
                                                        (error.value == null ? "" : `, value ${error.value}`)));
    }
    view().append(box);
  };

  // The server-sent events of a response body, as [name, data] pairs, as they arrive.
  async function* events(response) {
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      buffer += decoder.decode(value || new Uint8Array(), { stream: !done });
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        let name = "message", data = "";
        for (const line of block.split("\n")) {
          if (line.startsWith("event:")) name = line.slice(6).trim();
          else if (line.startsWith("data:")) data += line.slice(5).trim();
        }
        if (data) yield [name, JSON.parse(data)];
      }
      if (done) return;
    }
  }

  // The session as the server renders it, in place of the streamed messages.
  const showSession = async (reply) => {
    const url = `${form.dataset.view}?session=${encodeURIComponent(reply.session_key)}` +
                `&conversation=${encodeURIComponent(reply.conversation)}`;
    const response = await fetch(url, { credentials: "same-origin" });
    const rendered = new DOMParser().parseFromString(await response.text(), "text/html");
    const fresh = rendered.getElementById("session-view");
    if (response.ok && fresh) {
      view().replaceWith(document.importNode(fresh, true));
      history.replaceState(null, "", url);
    }
  };

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const data = new FormData(form);
    button.disabled = true;
    for (const old of document.querySelectorAll("#error")) old.remove();
    const list = messageList();
    const sent = message("user", data.get("text"));
    list.append(sent);
    // "streaming", not yet "assistant": the stored reply is the server's, shown once the run has ended
    const reply = message("streaming", "");
    reply.querySelector(".role").textContent = "assistant";
    reply.id = "streaming-reply";
    reply.setAttribute("aria-busy", "true");
    list.append(reply);
    const text = reply.querySelector(".text");
    setStatus("streaming", "The agent is answering…");
    let ended = false;
    try {
      const response = await fetch(form.dataset.stream, {
        method: "POST", body: new URLSearchParams(data), credentials: "same-origin",
        headers: { accept: "text/event-stream" } });
      if (response.redirected) { location.href = response.url; return; }  // signed out: to the sign-in page
      for await (const [name, payload] of events(response)) {
        if (name === "delta") text.textContent += payload.text;
        else if (name === "reply") {
          ended = true;
          reply.removeAttribute("aria-busy");
          form.elements.text.value = "";
          setStatus("done", "Answered.");
          await showSession(payload);
        } else if (name === "error") {
          ended = true;
          reply.classList.replace("streaming", "interrupted");
          reply.removeAttribute("aria-busy");
          if (!text.textContent) reply.remove();
          if (!response.ok) sent.remove();  // refused before the run: nothing was stored
          setStatus("error", "The run failed.");
          showError(payload.error);
        }
      }
      if (!ended) {
        setStatus("error", "The answer stopped before it was complete.");
        showError({ code: "stream_ended", message: "The answer stopped before it was complete.",
                    status: response.status });
      }
    } catch (error) {
      setStatus("error", "The console could not be reached.");
      showError({ code: "network_error", message: String(error), status: 0 });
    } finally {
      button.disabled = false;
    }
  });
})();
