// mcp-elicit browser UI: progressive enhancement only; every step works without this file.
// Reloads the page when the question on screen changes (a new one arrived, or it was withdrawn
// or timed out), keeps the "more waiting" count current, and focuses the first field with a
// problem. Talks only to this page's own /state endpoint.
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
  var bad = document.querySelector('[aria-invalid="true"], .invalid input');
  if (bad) { bad.focus(); }
})();
