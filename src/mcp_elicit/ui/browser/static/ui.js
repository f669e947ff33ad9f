// mcp-elicit browser UI: progressive enhancement only; every step works without this file.
// Reloads the page when the question on screen changes (a new one arrived, or it was withdrawn
// or timed out), keeps the "more waiting" count current, focuses the first field with a
// problem, marks the fields the browser could not read, reports that the person is typing or
// choosing (so the idle timeout waits), and says when the session has ended (the state says so,
// or three polls in a row fail: the program is gone). Talks only to this page's own /state and /q/<id>/active endpoints.
(function () {
  "use strict";
  var body = document.body;
  var stateUrl = body.getAttribute("data-state");
  var current = body.getAttribute("data-question") || "";
  var counter = document.getElementById("queued");
  var failures = 0;
  var over = false;
  // The session ended (the server said so, or it stopped answering: the program is gone): say so
  // in place of a question nobody can answer any more. Polling goes on, slower, in case it was not.
  function ended(said) {
    over = true;
    var main = document.getElementById("main");
    var shown = main.querySelector(".flash");  // what the page said last stays said
    said = said || (shown ? shown.textContent : "");
    var title = document.createElement("h1");
    var text = document.createElement("p");
    title.textContent = "This session has ended";
    text.textContent = "The program that asked these questions has finished; nothing more will be asked here. You can close this tab.";
    text.setAttribute("role", "status");
    main.textContent = "";
    if (said) {
      var flash = document.createElement("p");
      flash.className = "flash";
      flash.textContent = said;
      main.appendChild(flash);
    }
    main.appendChild(title);
    main.appendChild(text);
    if (counter) { counter.textContent = ""; }
    document.title = "Session ended · mcp-elicit";
  }
  function poll() {
    fetch(stateUrl, { cache: "no-store", credentials: "same-origin" })
      .then(function (r) { if (!r.ok) { throw new Error(String(r.status)); } return r.json(); })
      .then(function (s) {
        failures = 0;
        if (s.ended) { if (!over) { ended(s.flash); } return; }
        if (s.question !== current || over) { window.location.reload(); return; }
        if (counter) {
          counter.textContent = s.queued ? s.queued + " more question" + (s.queued === 1 ? "" : "s") + " waiting" : "";
        }
        window.setTimeout(poll, 1000);
      })
      .catch(function () {
        failures += 1;
        if (failures >= 3 && !over) { ended(); }
        window.setTimeout(poll, over ? 5000 : 1000);
      });
  }
  if (stateUrl) { window.setTimeout(poll, 1000); }
  // Typing or choosing in the question counts as activity for the idle timeout: reported through
  // the page's own guarded endpoint (with its CSRF token), at most once every data-active-every s.
  var every = parseFloat(body.getAttribute("data-active-every") || "") * 1000;
  var csrf = document.querySelector('input[name="csrf"]');
  var reported = -Infinity;
  function active() {
    var now = Date.now();
    if (over) { return; }
    if (now - reported < every) { return; }
    reported = now;
    fetch(stateUrl.replace(/state$/, "q/" + encodeURIComponent(current) + "/active"), {
      method: "POST",
      cache: "no-store",
      credentials: "same-origin",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body: "csrf=" + encodeURIComponent(csrf.value)
    }).catch(function () { reported = -Infinity; });
  }
  if (stateUrl && current && csrf && every > 0) {
    ["input", "change", "keydown", "pointerdown", "focusin", "wheel"].forEach(function (name) {
      document.addEventListener(name, active, { passive: true, capture: true });
    });
  }
  // What the browser cannot read ("1e" in a number, a date half typed) it sends as empty, which
  // would read as "no answer": say which fields those are, so the page shows a problem there.
  var answers = document.querySelector("form.answers");
  if (answers) {
    answers.addEventListener("submit", function () {
      answers.querySelectorAll('input[name^="bad."]').forEach(function (old) { old.remove(); });
      answers.querySelectorAll('input[name^="f."]').forEach(function (input) {
        if (input.validity && input.validity.badInput) {
          var mark = document.createElement("input");
          mark.type = "hidden";
          mark.name = "bad." + input.name.slice(2);
          mark.value = "1";
          answers.appendChild(mark);
        }
      });
    });
  }
  var bad = document.querySelector('[aria-invalid="true"], .invalid input');
  if (bad) { bad.focus(); }
})();
