// The demo site's only script: on a waiting page, poll the Auth Cloud status endpoint with the status token (no
// access key: the token is the credential) and, once the operation has ended, post the result form so the server
// verifies the result token and renders the outcome.
(function () {
  "use strict";
  var status = document.getElementById("status");
  var form = document.getElementById("result-form");
  if (!status || !form) { return; }
  var token = status.getAttribute("data-status-token");
  var words = { succeeded: "Confirmed on your phone.", failed: "Not confirmed: declined, failed or expired.", cancelled: "Cancelled.",
                unknown: "This request is unknown or has expired." };
  function show(state) {
    status.setAttribute("data-state", state);
    if (words[state]) { status.textContent = words[state]; }
  }
  function poll() {
    fetch("/api/v1/status", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ statusToken: token }) })
      .then(function (response) {
        if (response.status === 429) { throw new Error("rate limited"); }
        return response.json();
      })
      .then(function (answer) {
        if (answer.status === "pending") { setTimeout(poll, 1000); return; }
        show(answer.status || "unknown");
        form.submit();
      })
      .catch(function () { setTimeout(poll, 3000); });
  }
  poll();
})();
