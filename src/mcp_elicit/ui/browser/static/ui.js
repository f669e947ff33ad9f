// mcp-elicit browser UI: progressive enhancement only; every step works without this file.
// Reloads the page when the question on screen changes (a new one arrived, or it was withdrawn
// or timed out), keeps the "more waiting" count current, focuses the first field with a
// problem, and reports that the person is typing or choosing (so the idle timeout waits). Talks
// only to this page's own /state and /q/<id>/active endpoints.
(function () {
  "use strict";
  var body = document.body;
  var stateUrl = body.getAttribute("data-state");
  var current = body.getAttribute("data-question") || "";
  var counter = document.getElementById("queued");
  function poll() {
    fetch(stateUrl, { cache: "no-store", credentials: "same-origin" })
      .then(function (r) { return r.json(); })
      .then(function (s) {
        if (s.question !== current) { window.location.reload(); return; }
        if (counter) {
          counter.textContent = s.queued ? s.queued + " more question" + (s.queued === 1 ? "" : "s") + " waiting" : "";
        }
        window.setTimeout(poll, 1000);
      })
      .catch(function () { window.setTimeout(poll, 3000); });
  }
  if (stateUrl) { window.setTimeout(poll, 1000); }
  // Typing or choosing in the question counts as activity for the idle timeout: reported through
  // the page's own guarded endpoint (with its CSRF token), at most once every data-active-every s.
  var every = parseFloat(body.getAttribute("data-active-every") || "") * 1000;
  var csrf = document.querySelector('input[name="csrf"]');
  var reported = -Infinity;
  function active() {
    var now = Date.now();
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
  var bad = document.querySelector('[aria-invalid="true"], .invalid input');
  if (bad) { bad.focus(); }
})();
