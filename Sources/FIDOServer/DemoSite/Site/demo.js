// The demo site's only script: on a waiting page, poll the Auth Cloud status endpoint with the status token (no
// access key: the token is the credential) and, once the operation has ended, post the result form so the server
// verifies the result token and renders the outcome.
(function () {
  "use strict";
  var status = document.getElementById("status");
  var form = document.getElementById("result-form");
  if (!status || !form) { return; }
  var token = status.getAttribute("data-status-token");
  var waiting = status.innerHTML;
  var words = { succeeded: "Confirmed on your phone.", failed: "Not confirmed: declined, failed or expired.", cancelled: "Cancelled.",
                unknown: "This request is unknown or has expired.",
                unreachable: "The bank's server does not answer right now. Still trying; your phone's answer is not lost.",
                busy: "The bank's server is busy. Still trying…" };
  function show(state) {
    status.setAttribute("data-state", state);
    if (words[state]) { status.textContent = words[state]; }
  }
  function poll() {
    fetch("/api/v1/status", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ statusToken: token }) })
      .then(function (response) {
        if (response.status === 429 || response.status === 503) { throw new Error("busy"); }
        if (!response.ok && response.status >= 500) { throw new TypeError("server error"); }
        return response.json();
      })
      .then(function (answer) {
        if (answer.status === "pending") {
          // Back after an outage: say so by showing the waiting line again.
          if (status.getAttribute("data-state") !== "pending") { status.setAttribute("data-state", "pending"); status.innerHTML = waiting; }
          setTimeout(poll, 1000);
          return;
        }
        show(answer.status || "unknown");
        form.submit();
      })
      .catch(function (error) {
        // A person waiting must not stare at a spinner while the server is gone: say it, and keep asking.
        show(error && error.message === "busy" ? "busy" : "unreachable");
        setTimeout(poll, 3000);
      });
  }
  poll();
})();

// The start page's passkeys: the browser's WebAuthn API against the server's FIDO2 API (nevisFIDO's), with the
// options and answers in their JSON forms (parseCreationOptionsFromJSON, parseRequestOptionsFromJSON, toJSON). On
// the username field's first focus the page keeps one sign-in pending for its autofill (conditional mediation); a
// button aborts it for its own ceremony. A sign-in's session token goes to the result page, which verifies it.
(function () {
  "use strict";
  var card = document.getElementById("passkey-card");
  if (!card) { return; }
  var field = document.getElementById("passkey-username");
  var status = document.getElementById("passkey-status");
  var resultForm = document.getElementById("passkey-result-form");
  var pending = null;
  // What a person reads first; the server's reason, for whoever helps them, below it in small print.
  function say(state, text, detail) {
    status.setAttribute("data-state", state);
    status.textContent = text;
    if (detail) {
      var small = document.createElement("span");
      small.className = "detail";
      small.textContent = detail;
      status.appendChild(small);
    }
  }
  function Refused(lead, detail) { this.lead = lead; this.detail = detail; }
  if (!window.PublicKeyCredential || !PublicKeyCredential.parseRequestOptionsFromJSON) {
    say("error", "This browser cannot use passkeys here.");
    document.getElementById("passkey-signin").disabled = true;
    document.getElementById("passkey-signup").disabled = true;
    return;
  }
  function post(path, body) {
    return fetch(path, { method: "POST", headers: { "Content-Type": "application/json", "Accept": "application/json" }, body: JSON.stringify(body) })
      .then(function (response) {
        return response.json().catch(function () { return { status: "failed", errorMessage: "The server answered " + response.status + "." }; });
      });
  }
  function check(answer, lead) {
    if (answer.status !== "ok") { throw new Refused(lead, answer.errorMessage || answer.message || ""); }
    return answer;
  }
  function browserError(error) {
    if (error && error.name === "AbortError") { return null; }
    if (error && error.name === "InvalidStateError") { return "This device already has a passkey for this account."; }
    if (error && error.name === "NotAllowedError") { return "Cancelled, or no passkey for this site was chosen."; }
    return (error && error.message) || "The browser could not use the passkey.";
  }
  function cancelPending() { if (pending) { pending.abort(); pending = null; } }
  function signIn(username, mediation) {
    var controller = new AbortController();
    if (mediation) { pending = controller; }
    return post("/nevisfido/fido2/assertion/options", { username: username })
      .then(function (options) {
        check(options, "The bank cannot start a passkey sign-in right now.");
        var request = { publicKey: PublicKeyCredential.parseRequestOptionsFromJSON(options), signal: controller.signal };
        if (mediation) { request.mediation = mediation; card.setAttribute("data-conditional", "waiting"); }
        return navigator.credentials.get(request);
      })
      .then(function (credential) {
        if (mediation) { card.setAttribute("data-conditional", "answered"); }
        say("waiting", "Checking your passkey…");
        return post("/nevisfido/fido2/assertion/result", credential.toJSON());
      })
      .then(function (answer) {
        check(answer, "Your passkey did not sign you in.");
        document.getElementById("passkey-token").value = answer.token;
        resultForm.submit();
      });
  }
  function fail(error) {
    if (error instanceof Refused) { say("error", error.lead, error.detail); return; }
    var text = browserError(error);
    if (text) { say("error", text); }
  }
  document.getElementById("passkey-signin").addEventListener("click", function () {
    cancelPending();
    say("waiting", "Use your passkey…");
    signIn(field.value.trim(), null).catch(fail);
  });
  document.getElementById("passkey-signup").addEventListener("click", function () {
    var username = field.value.trim();
    if (!username) { say("error", "Choose a username first."); field.focus(); return; }
    cancelPending();
    say("waiting", "Creating a passkey for " + username + "…");
    post("/demo/passkey/signup", { username: username })
      .then(function (options) {
        check(options, "No passkey can be made for this username.");
        return navigator.credentials.create({ publicKey: PublicKeyCredential.parseCreationOptionsFromJSON(options) });
      })
      .then(function (credential) {
        var body = credential.toJSON();
        body.userFriendlyName = "Passkey made on the Example Bank site";
        return post("/nevisfido/fido2/attestation/result", body);
      })
      .then(function (answer) {
        check(answer, "The bank did not accept this passkey.");
        say("registered", "Passkey created for " + username + ". Sign in with it.");
      })
      .catch(fail);
  });
  // Autofill starts when the field first gets focus, not on load: each pending request is a challenge the server keeps
  // until it expires, and a page view nobody signs in from should not cost one.
  var offered = false;
  field.addEventListener("focus", function () {
    if (offered || !PublicKeyCredential.isConditionalMediationAvailable) { return; }
    offered = true;
    PublicKeyCredential.isConditionalMediationAvailable().then(function (available) {
      if (available) { signIn("", "conditional").catch(fail); }
    });
  });
})();
