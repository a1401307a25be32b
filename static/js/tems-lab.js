/* The double-click lab: switch the real Register button's protection off, fire bursts of real taps, and log
 * every request with its idempotency key and the server's answer. */
(function () {
  "use strict";

  function panel() { return document.getElementById("tryit-panel"); }
  function registerForm() { var p = panel(); return p && p.querySelector("form.register-form"); }
  function protectionOn() { var t = document.getElementById("lab-disable-toggle"); return !t || t.checked; }

  function applyToggle() {
    var form = registerForm();
    if (form) form.dataset.disableWhileInFlight = protectionOn() ? "true" : "false";
  }

  function describe(status, replayed, html) {
    var doc = new DOMParser().parseFromString(html || "", "text/html");
    var code = doc.querySelector(".registration-card code");
    var notice = doc.querySelector(".message");
    var parts = [String(status)];
    if (replayed) parts.push("replayed");
    if (code) parts.push("registration " + code.textContent.trim());
    if (notice) parts.push("“" + notice.textContent.trim() + "”");
    return parts.join(" · ");
  }

  // A line is added when the tap is SENT, so taps are numbered in the order they were made; the answer fills it
  // in when it comes, in whatever order the server answers. The list is part of the section "Start over"
  // replaces, so a new event starts again at tap 1.
  function logTap(key) {
    var list = document.getElementById("lab-request-log");
    if (!list) return null;
    var item = document.createElement("li");
    var keyEl = document.createElement("code");
    keyEl.textContent = key ? key.slice(0, 8) + "…" : "(no key)";
    var answer = document.createElement("span");
    answer.className = "log-answer";
    answer.textContent = "waiting for the answer…";
    item.appendChild(document.createTextNode("Tap " + (list.children.length + 1) + ", key "));
    item.appendChild(keyEl);
    item.appendChild(document.createTextNode(" → "));
    item.appendChild(answer);
    list.appendChild(item);
    return item;
  }

  function logAnswer(item, text, ok) {
    if (!item) return;
    item.className = ok ? "log-ok" : "log-bad";
    item.querySelector(".log-answer").textContent = text;
  }

  document.addEventListener("change", function (event) {
    if (event.target && event.target.id === "lab-disable-toggle") applyToggle();
  });
  document.addEventListener("htmx:afterSettle", applyToggle);
  document.addEventListener("DOMContentLoaded", applyToggle);

  // With protection on, htmx sends the tap. The form is still in the page when the request starts; by the time
  // the answer is in, the panel it belonged to has been swapped out, so the line travels with the request.
  document.addEventListener("htmx:beforeRequest", function (event) {
    var elt = event.detail.elt;
    if (!elt || !elt.matches || !elt.matches("#tryit-panel form.register-form")) return;
    var headers = (event.detail.requestConfig && event.detail.requestConfig.headers) || {};
    event.detail.xhr.temsLabLine = logTap(headers["Idempotency-Key"]);
  });

  document.addEventListener("htmx:afterRequest", function (event) {
    var xhr = event.detail.xhr;
    if (!xhr || !xhr.temsLabLine) return;
    var text = xhr.status ? describe(xhr.status, xhr.getResponseHeader("Idempotent-Replayed"), xhr.responseText)
                          : "no answer (network error)";
    logAnswer(xhr.temsLabLine, text, xhr.status > 0 && xhr.status < 400);
  });

  function csrfToken() {
    var field = document.querySelector("input[name=csrfmiddlewaretoken]");
    return field ? field.value : "";
  }

  // One tap as a browser without any protection sends it: its own key, its own request, nothing waits.
  var inFlight = 0;
  function sendTap() {
    var p = panel();
    if (!p) return Promise.resolve();
    var key = window.temsUuid4();
    var body = new URLSearchParams({ idempotency_key: key, csrfmiddlewaretoken: csrfToken() });
    var line = logTap(key);
    inFlight += 1;
    return fetch(p.dataset.registerUrl, {
      method: "POST", credentials: "same-origin", body: body,
      headers: { "Idempotency-Key": key, "X-CSRFToken": csrfToken(), "HX-Request": "true" }
    }).then(function (response) {
      return response.text().then(function (html) {
        logAnswer(line, describe(response.status, response.headers.get("Idempotent-Replayed"), html), response.ok);
      });
    }).catch(function (error) {
      logAnswer(line, "network error: " + error, false);
    }).finally(function () {
      inFlight -= 1;
      if (inFlight === 0) window.htmx.ajax("GET", p.dataset.refreshUrl, { target: "#tryit-panel", swap: "outerHTML" });
    });
  }

  // With protection off, the lab takes the Register button's clicks: htmx would queue a tap made while another
  // is in flight, and the point here is to let every click reach the server at once, as it can in the wild.
  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (protectionOn() || !form.matches || !form.matches("#tryit-panel form.register-form")) return;
    event.preventDefault();
    event.stopPropagation();
    sendTap();
  }, true);

  function burst(button) {
    var count = Number(button.dataset.count), spread = Number(button.dataset.spreadMs);
    for (var i = 0; i < count; i++) {
      window.setTimeout(sendTap, count > 1 ? Math.round(i * spread / (count - 1)) : 0);
    }
  }

  document.addEventListener("click", function (event) {
    var button = event.target && event.target.closest && event.target.closest("#lab-burst");
    if (button) burst(button);
  });
})();
