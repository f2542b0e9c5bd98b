"""The relying-party web demo in a real browser: headless Chromium driven by selenium (chromedriver), with a
headless phone (`mauth device`) that scans the QR code the page shows and confirms the pushed transaction.

Run by .ci/browser-test, which starts `mauth demo web` (push to a local stand-in) and creates the device; the
environment says where everything is:
  MAUTH_DEMO_URL       the demo's start page (https://127.0.0.1:PORT/demo)
  MAUTH_PASSKEY_URL    the same page at https://localhost:PORT/demo, where passkeys work (WebAuthn needs a domain)
  MAUTH_DATABASE       the server's SQLite file, for `mauth admin`
  MAUTH_SPKI_HASH      base64 SHA-256 of the server's public key: the only certificate Chromium accepts besides its roots
  MAUTH_BIN            the mauth executable
  MAUTH_DEVICE_DIR     the headless phone's directory
  MAUTH_STRANGER_DIR   a second headless phone, set up for the server but registered for nobody
  MAUTH_TOKEN_LIFETIME the server's dispatch token lifetime in seconds (the expiry step waits it out)
  SCREENSHOT_DIR       where the screenshots go (the CI keeps them as artifacts)
"""
import base64
import json
import os
import subprocess
import sys
import traceback

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

DEMO = os.environ["MAUTH_DEMO_URL"]
PASSKEY_DEMO = os.environ["MAUTH_PASSKEY_URL"]
DATABASE = os.environ["MAUTH_DATABASE"]
MAUTH = os.environ["MAUTH_BIN"]
SHOTS = os.environ["SCREENSHOT_DIR"]
STRANGER = os.environ["MAUTH_STRANGER_DIR"]
TOKEN_LIFETIME = int(os.environ["MAUTH_TOKEN_LIFETIME"])
PIN = "246810"
MESSAGE = "Pay CHF 250.00 to Example Shop"


# Records the pages' Signal API calls (WebAuthn Level 3) before the browser's own run, so a step can see which the
# page made and with what: a spy of the test's, added to every document, never part of the site.
SIGNAL_SPY = """
(function () {
  window.__signals = [];
  if (!window.PublicKeyCredential) { return; }
  ["signalUnknownCredential", "signalAllAcceptedCredentials", "signalCurrentUserDetails"].forEach(function (name) {
    var original = PublicKeyCredential[name];
    PublicKeyCredential[name] = function (argument) {
      window.__signals.push({ name: name, argument: JSON.parse(JSON.stringify(argument)) });
      return original ? original.call(PublicKeyCredential, argument) : Promise.resolve();
    };
  });
  // What the page hands navigator.credentials: the hints, and the allowed credentials' ID lengths.
  window.__requests = [];
  ["get", "create"].forEach(function (name) {
    var original = navigator.credentials[name].bind(navigator.credentials);
    navigator.credentials[name] = function (options) {
      var key = (options && options.publicKey) || {};
      window.__requests.push({ name: name, mediation: options && options.mediation, hints: key.hints || [],
        allow: (key.allowCredentials || []).map(function (c) { return c.id.byteLength; }) });
      return original(options);
    };
  });
})();
"""


def browser():
    options = webdriver.ChromeOptions()
    options.binary_location = os.environ.get("CHROMIUM_BIN", "/usr/bin/chromium")
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,900",
                     # Trust exactly this server's key (its certificate is a development one), nothing else.
                     "--ignore-certificate-errors-spki-list=" + os.environ["MAUTH_SPKI_HASH"]):
        options.add_argument(argument)
    service = Service(executable_path=os.environ.get("CHROMEDRIVER_BIN", "/usr/bin/chromedriver"))
    driver = webdriver.Chrome(service=service, options=options)
    driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": SIGNAL_SPY})
    return driver


def device(*arguments, directory=None, succeed=True):
    """Runs `mauth device ARGUMENTS --json` (on the phone in `directory`, by default Carol's); fails the test with its
    output when it exits non-zero, or, with `succeed=False`, when it exits zero."""
    environment = dict(os.environ, MAUTH_DEVICE_DIR=directory) if directory else None
    result = subprocess.run([MAUTH, "device", *arguments, "--json"], capture_output=True, text=True, timeout=60, env=environment)
    if not succeed:
        if result.returncode == 0:
            raise AssertionError(f"mauth device {' '.join(arguments)} succeeded: {result.stdout}")
        return result.stdout + result.stderr
    if result.returncode != 0:
        raise AssertionError(f"mauth device {' '.join(arguments)} failed: {result.stdout} {result.stderr}")
    return json.loads(result.stdout)


def admin(*arguments):
    """Runs `mauth admin ARGUMENTS --database DATABASE` as an operator would, while the server runs."""
    result = subprocess.run([MAUTH, "admin", *arguments, "--database", DATABASE], capture_output=True, text=True, timeout=60)
    if result.returncode != 0:
        raise AssertionError(f"mauth admin {' '.join(arguments)} failed: {result.stdout} {result.stderr}")
    return result.stdout


class VirtualAuthenticator:
    """Chromium's virtual authenticator through the DevTools Protocol's WebAuthn domain: a platform authenticator
    (CTAP 2.1, internal transport) with resident keys and user verification, answering without a person."""

    def __init__(self, driver):
        self.driver = driver
        driver.execute_cdp_cmd("WebAuthn.enable", {"enableUI": False})
        self.id = driver.execute_cdp_cmd("WebAuthn.addVirtualAuthenticator", {"options": {
            "protocol": "ctap2", "ctap2Version": "ctap2_1", "transport": "internal", "hasResidentKey": True,
            "hasUserVerification": True, "isUserVerified": True, "automaticPresenceSimulation": True}})["authenticatorId"]

    def credentials(self):
        return self.driver.execute_cdp_cmd("WebAuthn.getCredentials", {"authenticatorId": self.id})["credentials"]

    def clear(self):
        self.driver.execute_cdp_cmd("WebAuthn.clearCredentials", {"authenticatorId": self.id})

    def override(self, **bits):
        """The next answers' flags and signature as `bits` say (isBogusSignature, isBadUV, isBadUP); none resets them."""
        self.driver.execute_cdp_cmd("WebAuthn.setResponseOverrideBits", dict(authenticatorId=self.id, **bits))


def zbar(png_path):
    """Decodes a QR code image with zbarimg, an independent decoder. QR codes only: zbarimg otherwise looks for every
    kind of barcode and can find a linear one in a QR code's modules (QRCodeReader.arguments in FIDOSimulation)."""
    result = subprocess.run(["zbarimg", "--quiet", "--raw", "-Sdisable", "-Sqrcode.enable", "-Sqrcode.binary", png_path],
                            capture_output=True, timeout=30)
    assert result.returncode == 0, f"zbarimg could not read {png_path}: {result.stderr!r}"
    return result.stdout.decode().rstrip("\n")


class Steps:
    def __init__(self, driver):
        self.driver = driver
        self.wait = WebDriverWait(driver, 30)
        self.passed = 0
        self.failed = 0

    def shot(self, name):
        path = os.path.join(SHOTS, name)
        self.driver.save_screenshot(path)
        return path

    def text(self, element_id):
        return self.driver.find_element(By.ID, element_id).text

    def error_text(self):
        """The start page's error, once the page that shows it has loaded (a click returns before it does)."""
        return self.wait.until(EC.visibility_of_element_located((By.ID, "error"))).text

    def step(self, title, body):
        try:
            body()
            self.passed += 1
            print(f"ok   {title}", flush=True)
        except Exception:
            self.failed += 1
            print(f"FAIL {title}", flush=True)
            traceback.print_exc()
            self.shot("failure-" + title.split(":")[0].replace(" ", "-") + ".png")

    def scan_qr(self, name):
        """What the phone's camera sees: the QR code as Chromium renders it, decoded by zbarimg."""
        qr = self.wait.until(EC.visibility_of_element_located((By.ID, "qr-code")))
        path = os.path.join(SHOTS, name)
        with open(path, "wb") as image:
            image.write(qr.screenshot_as_png)
        scanned = zbar(path)
        # The same code as the image the server sent (its data URI), read by the same independent decoder.
        source = qr.get_attribute("src")
        assert source.startswith("data:image/png;base64,"), source[:40]
        sent = os.path.join(SHOTS, "sent-" + name)
        with open(sent, "wb") as image:
            image.write(base64.b64decode(source.split(",", 1)[1]))
        assert zbar(sent) == scanned, "the rendered QR code and the one the server sent differ"
        return path, scanned

    def log_in(self, username, message=None, by_app=False, page=None):
        """Fills the start page's log-in form (its transaction replaced when `message` is given) and submits it."""
        self.driver.get(page or DEMO)
        self.driver.find_element(By.ID, "login-username").send_keys(username)
        if message is not None:
            field = self.driver.find_element(By.ID, "login-message")
            field.clear()
            field.send_keys(message)
        if by_app:
            self.driver.find_element(By.ID, "channel-app").click()
        self.driver.find_element(By.ID, "login-submit").click()

    def wait_outcome(self, expected):
        self.wait.until(EC.text_to_be_present_in_element((By.ID, "outcome"), expected))

    def passkey_page(self, username=""):
        """The start page at the passkeys' origin, with `username` in the passkey field set without focusing it (focus
        starts the autofill request, which the virtual authenticator would answer at once)."""
        self.driver.get(PASSKEY_DEMO)
        self.wait.until(EC.presence_of_element_located((By.ID, "passkey-card")))
        self.driver.execute_script("document.getElementById('passkey-username').value = arguments[0];", username)

    def passkey_status(self, states=("registered", "error"), element_id="passkey-status"):
        """The passkey card's status (or another passkey status line) once it is one of `states`: (state, text)."""
        element = self.driver.find_element(By.ID, element_id)
        self.wait.until(lambda _: element.get_attribute("data-state") in states)
        return element.get_attribute("data-state"), element.text

    def signed_in_with_passkey(self, username):
        """Waits for the passkey result page and checks the session token it verified."""
        self.wait_outcome("Signed in with a passkey")
        claims = self.text("claims")
        for expected in (f"sub {username}", "method passkey", "token_use authentication"):
            assert expected in claims, f"{expected} not in {claims}"


def main():
    os.makedirs(SHOTS, exist_ok=True)
    driver = browser()
    steps = Steps(driver)
    try:
        def home():
            driver.get(DEMO)
            assert "Example Bank" in driver.title + driver.find_element(By.CLASS_NAME, "brand").text
            assert driver.find_element(By.ID, "login-message").get_attribute("value") == MESSAGE
            # Opened by its address, the page cannot have passkeys: it says so and links the name that can.
            elsewhere = driver.find_element(By.ID, "passkey-elsewhere")
            assert elsewhere.get_attribute("href") == PASSKEY_DEMO, elsewhere.get_attribute("href")
            assert driver.find_element(By.ID, "passkey-signin").get_attribute("disabled") is not None
            steps.shot("01-home.png")
        steps.step("start page: sign-up and log-in forms", home)

        scanned = {}

        def sign_up():
            driver.find_element(By.ID, "signup-username").send_keys("carol")
            driver.find_element(By.ID, "signup-submit").click()
            path, text = steps.scan_qr("qr-enroll.png")
            link = driver.find_element(By.ID, "app-link").get_attribute("href")
            assert text == link, f"the QR code says {text[:60]}…, the app link is {link[:60]}…"
            assert "dispatchTokenResponse=" in text
            assert "Waiting" in steps.text("status")
            steps.shot("02-signup-qr.png")
            scanned["enroll"] = path
        steps.step("sign-up: a QR code that decodes to the app link", sign_up)

        def register():
            answer = device("register", "--qr-image", scanned["enroll"], "--pin", PIN)
            assert answer["username"] == "carol", answer
            steps.wait_outcome("Registered")
            assert "carol" in steps.text("summary")
            assert driver.find_element(By.ID, "result").get_attribute("data-outcome") == "succeeded"
            claims = steps.text("claims")
            assert "enroll" in claims and "carol" in claims, claims
            steps.shot("03-registered.png")
        steps.step("the phone scans and registers; the page updates to Registered by itself", register)

        def push_login():
            driver.get(DEMO)
            driver.find_element(By.ID, "login-username").send_keys("carol")
            assert driver.find_element(By.ID, "channel-push").is_selected()
            driver.find_element(By.ID, "login-submit").click()
            steps.wait.until(EC.visibility_of_element_located((By.ID, "status")))
            assert steps.text("transaction") == MESSAGE
            steps.shot("04-push-waiting.png")
            pending = device("pending")
            assert len(pending["operations"]) == 1, pending
            approved = device("approve", "--pin", PIN)
            assert approved["approved"] is True and approved["transaction"] == MESSAGE, approved
            steps.wait_outcome("Transaction confirmed")
            check = driver.find_element(By.ID, "transaction-check")
            assert "ok" in check.get_attribute("class").split(), check.text
            claims = steps.text("claims")
            for expected in ("carol", "approval", "succeeded", "txn_hash", "F1D0#1001"):
                assert expected in claims, f"{expected} not in {claims}"
            steps.shot("05-push-confirmed.png")
            driver.set_window_size(390, 844)
            steps.shot("06-push-confirmed-phone.png")
            driver.set_window_size(1280, 900)
        steps.step("push log-in: the phone shows the transaction, confirms, the page shows the verified token", push_login)

        def qr_login():
            steps.log_in("carol", "Transfer EUR 75.00 to Dave", by_app=True)
            path, _ = steps.scan_qr("qr-login.png")
            steps.shot("07-qr-login.png")
            approved = device("approve", "--qr-image", path, "--pin", PIN)
            assert approved["transaction"] == "Transfer EUR 75.00 to Dave", approved
            steps.wait_outcome("Transaction confirmed")
            assert steps.text("transaction") == "Transfer EUR 75.00 to Dave"
            steps.shot("08-qr-confirmed.png")
        steps.step("QR log-in: the phone scans the code from the page and confirms", qr_login)

        def rendered_markup():
            steps.log_in("carol", "<html>Transfer <b>EUR 12.00</b><br>to Dave</html>")
            steps.wait.until(EC.visibility_of_element_located((By.ID, "status")))
            quote = driver.find_element(By.ID, "transaction")
            assert quote.text == "Transfer EUR 12.00\nto Dave", repr(quote.text)
            assert quote.find_element(By.TAG_NAME, "b").text == "EUR 12.00"
            steps.shot("08a-markup-waiting.png")
            driver.set_window_size(390, 844)
            steps.shot("08b-markup-waiting-phone.png")
            driver.set_window_size(1280, 900)
            driver.find_element(By.ID, "cancel").click()
            steps.wait_outcome("Cancelled")
        steps.step("markup: the transaction's allowed HTML is rendered on the page, not shown as tags", rendered_markup)

        def refusals():
            steps.log_in("nobody")
            error = steps.error_text()
            assert "no such user" in error.lower(), error
            steps.shot("09-unknown-user.png")
            steps.log_in("carol", "<script>alert(1)</script>")
            error = steps.error_text()
            assert "message" in error, error
            assert not device("pending")["operations"], "a refused message was dispatched"
        steps.step("refusals: an unknown user and a message outside the allowed HTML are shown, nothing is sent", refusals)

        def ending(expected_heading, expected_ending):
            steps.wait_outcome(expected_heading)
            found = driver.find_element(By.ID, "result").get_attribute("data-ending")
            assert found == expected_ending, f"data-ending is {found}, not {expected_ending}"
            assert "claims" not in driver.page_source.split('id="result"', 1)[1], "no result token for an operation that did not succeed"

        def push_waiting():
            steps.log_in("carol")
            steps.wait.until(EC.visibility_of_element_located((By.ID, "status")))

        def declined():
            push_waiting()
            denied = device("deny")
            assert denied["approved"] is False, denied
            ending("Declined on the phone", "declined")
            steps.shot("10-declined.png")
        steps.step("decline: the phone declines, the page says so by itself", declined)

        def outage():
            push_waiting()
            # The status endpoint stops answering (as when the server is down): the page says so, keeps asking, and
            # goes on waiting once it answers again; the phone's decline then reaches it as usual.
            driver.execute_cdp_cmd("Network.enable", {})
            driver.execute_cdp_cmd("Network.setBlockedURLs", {"urls": ["*/api/v1/status*"]})
            try:
                steps.wait.until(EC.text_to_be_present_in_element((By.ID, "status"), "does not answer"))
                assert driver.find_element(By.ID, "status").get_attribute("data-state") == "unreachable"
                steps.shot("10a-outage.png")
                driver.set_window_size(390, 844)
                steps.shot("10b-outage-phone.png")
                driver.set_window_size(1280, 900)
            finally:
                driver.execute_cdp_cmd("Network.setBlockedURLs", {"urls": []})
            steps.wait.until(EC.text_to_be_present_in_element((By.ID, "status"), "Waiting for your phone"))
            denied = device("deny")
            assert denied["approved"] is False, denied
            ending("Declined on the phone", "declined")
        steps.step("outage: the waiting page says the server does not answer, then carries on", outage)

        def qr_waiting(name):
            """Asks carol to confirm by QR code and returns the scanned code's image."""
            steps.log_in("carol", by_app=True)
            path, _ = steps.scan_qr(name)
            return path

        def failed_on_phone():
            path = qr_waiting("qr-stranger.png")
            # Someone else's phone scans the code: it has no authenticator for carol, and reports that.
            device("approve", "--qr-image", path, "--pin", PIN, directory=STRANGER, succeed=False)
            ending("Failed on the phone", "failed")
            steps.shot("11-failed.png")
        steps.step("failure: a phone without carol's authenticator scans the code; the page says it failed", failed_on_phone)

        def cancelled():
            push_waiting()
            driver.find_element(By.ID, "cancel").click()
            ending("Cancelled", "cancelled")
            assert not device("pending")["operations"], "the phone still lists a cancelled operation"
            steps.shot("12-cancelled.png")
        steps.step("cancel: the page withdraws the request; the phone no longer lists it", cancelled)

        def expired():
            path = qr_waiting("qr-expiring.png")
            WebDriverWait(driver, TOKEN_LIFETIME + 30).until(EC.text_to_be_present_in_element((By.ID, "outcome"), "Expired"))
            ending("Expired", "expired")
            refused = device("approve", "--qr-image", path, "--pin", PIN, succeed=False)
            assert "expired" in refused.lower(), refused
            steps.shot("13-expired.png")
        steps.step("expiry: nobody answers; the page says it expired and the code no longer works", expired)

        authenticator = VirtualAuthenticator(driver)

        def passkey_sign_up():
            steps.passkey_page("dave")
            steps.shot("14-passkey-home.png")
            driver.find_element(By.ID, "passkey-signup").click()
            state, text = steps.passkey_status()
            assert state == "registered", text
            steps.shot("15-passkey-created.png")
            stored = authenticator.credentials()
            assert len(stored) == 1 and stored[0]["isResidentCredential"], stored
            created = [r for r in driver.execute_script("return window.__requests;") if r["name"] == "create"]
            assert created and created[-1]["hints"] == ["client-device"], created
            shown = json.loads(admin("user", "show", "dave", "--json"))
            assert len(shown["passkeys"]) == 1 and shown["passkeys"][0]["discoverable"] is True, shown
        steps.step("passkey sign-up: Chromium's authenticator makes a discoverable passkey the server stores", passkey_sign_up)

        def passkey_sign_in():
            steps.passkey_page("dave")
            driver.find_element(By.ID, "passkey-signin").click()
            steps.signed_in_with_passkey("dave")
            # Dave signed up a moment ago with a passkey only: welcomed, and not offered a phone he does not have.
            assert steps.text("summary").startswith("Welcome, dave: your account is ready."), steps.text("summary")
            assert not driver.find_elements(By.ID, "step-up")
            steps.shot("16-passkey-signed-in.png")
            driver.set_window_size(390, 844)
            steps.shot("17-passkey-signed-in-phone.png")
            driver.get(PASSKEY_DEMO)
            driver.execute_script("document.getElementById('passkey-card').scrollIntoView();")
            steps.shot("18-passkey-home-phone.png")
            driver.set_window_size(1280, 900)
        steps.step("passkey sign-in by username: the page shows the verified session token", passkey_sign_in)

        def passkey_without_username():
            steps.passkey_page("")
            driver.find_element(By.ID, "passkey-signin").click()
            steps.signed_in_with_passkey("dave")
        steps.step("passkey sign-in without a username: the passkey's user handle names dave", passkey_without_username)

        def passkey_autofill():
            steps.passkey_page("")
            # Focus starts the conditional request; the virtual authenticator answers it as a person picking the
            # passkey from the field's autofill would.
            driver.find_element(By.ID, "passkey-username").click()
            steps.signed_in_with_passkey("dave")
        steps.step("passkey autofill: conditional mediation signs dave in from the username field", passkey_autofill)

        def names(element_id="passkey-list"):
            return [i.get_attribute("value") for i in driver.find_elements(By.CSS_SELECTOR, f"#{element_id} .passkey-name")]

        def your_passkeys():
            # Dave, signed in with his passkey, names it; removing it is refused: it is his only way in.
            steps.passkey_page("dave")
            driver.find_element(By.ID, "passkey-signin").click()
            steps.signed_in_with_passkey("dave")
            steps.wait.until(lambda _: driver.find_element(By.ID, "passkey-list").get_attribute("data-count") == "1")
            field = driver.find_element(By.CSS_SELECTOR, "#passkey-list .passkey-name")
            field.clear()
            field.send_keys("Dave's laptop")
            driver.find_element(By.CSS_SELECTOR, "#passkey-list .passkey-rename").click()
            state, text = steps.passkey_status(element_id="passkey-list-status")
            assert state == "registered" and text == "Renamed.", text
            assert names() == ["Dave's laptop"], names()
            shown = json.loads(admin("user", "show", "dave", "--json"))
            assert shown["passkeys"][0]["name"] == "Dave's laptop", shown
            held = authenticator.credentials()[0]
            wanted = base64.urlsafe_b64encode(base64.b64decode(held["credentialId"])).decode().rstrip("=")
            signals = driver.execute_script("return window.__signals;")
            accepted = [s["argument"] for s in signals if s["name"] == "signalAllAcceptedCredentials"]
            details = [s["argument"] for s in signals if s["name"] == "signalCurrentUserDetails"]
            assert accepted and accepted[-1]["allAcceptedCredentialIds"] == [wanted] and accepted[-1]["rpId"] == "localhost", signals
            assert details and details[-1]["name"] == "dave", signals
            driver.find_element(By.CSS_SELECTOR, "#passkey-list .passkey-remove").click()
            state, text = steps.passkey_status(element_id="passkey-list-status")
            assert state == "error" and "last way to sign in" in text, text
            assert names() == ["Dave's laptop"], names()
            steps.shot("18b-your-passkeys.png")
        steps.step("your passkeys: dave names his passkey, the page signals the list, his only passkey is kept", your_passkeys)

        def decoys_and_hints():
            # A username without passkeys gets decoys of the usual shape: the browser is asked for one of them, has
            # none, and the page says so as for any passkey the person does not have. The configured hint reaches
            # the browser with every request.
            steps.passkey_page("nobody-here")
            driver.find_element(By.ID, "passkey-signin").click()
            state, text = steps.passkey_status(("error",))
            assert text == "Cancelled, or no passkey for this site was chosen.", text
            requests = driver.execute_script("return window.__requests;")
            get = [r for r in requests if r["name"] == "get" and not r["mediation"]][-1]
            assert 1 <= len(get["allow"]) <= 2 and all(n in (16, 20, 32, 64) for n in get["allow"]), get
            assert get["hints"] == ["client-device"], get
            # The same username asked again gets the same decoys (no change tells them from a real list).
            steps.passkey_page("nobody-here")
            driver.find_element(By.ID, "passkey-signin").click()
            steps.passkey_status(("error",))
            again = [r for r in driver.execute_script("return window.__requests;") if r["name"] == "get" and not r["mediation"]][-1]
            assert again["allow"] == get["allow"], (get, again)
            steps.shot("18c-passkey-decoys.png")
        steps.step("decoys: a username without passkeys gets a list of the usual shape; the hint reaches the browser", decoys_and_hints)

        def refused(expected, name, username="dave"):
            steps.passkey_page(username)
            driver.find_element(By.ID, "passkey-signin").click()
            state, text = steps.passkey_status(("error",))
            # A sentence for the person, then the server's reason in small print.
            assert text.startswith("Your passkey did not sign you in."), text
            assert expected in text, text
            assert "/demo/passkey/result" not in driver.current_url
            steps.shot(name)

        def missing_verification():
            authenticator.override(isBadUV=True)
            try:
                refused("not verified", "19-passkey-no-uv.png")
            finally:
                authenticator.override()
        steps.step("passkey without user verification: refused where it is required", missing_verification)

        def bogus_signature():
            authenticator.override(isBogusSignature=True)
            try:
                refused("not registered for this relying party and user", "20-passkey-bogus-signature.png")
            finally:
                authenticator.override()
        steps.step("passkey with a bogus signature: refused", bogus_signature)

        def excluded():
            # Dave signs in and asks to add a passkey from the page that welcomes him: the options exclude the one
            # this authenticator holds. A sign-up for dave is refused as taken before any options are made.
            steps.passkey_page("dave")
            driver.find_element(By.ID, "passkey-signup").click()
            state, text = steps.passkey_status()
            assert state == "error" and "log in first" in text, text
            steps.passkey_page("dave")
            driver.find_element(By.ID, "passkey-signin").click()
            steps.signed_in_with_passkey("dave")
            driver.find_element(By.ID, "add-passkey").click()
            state, text = steps.passkey_status(element_id="add-passkey-status")
            assert state == "error" and "already has a passkey" in text, text
            assert len([c for c in authenticator.credentials() if c["userName"] == "dave"]) == 1
            steps.shot("21-passkey-excluded.png")
        steps.step("a second passkey for dave on the same authenticator: excluded by the options", excluded)

        def removed_by_admin():
            held = [c for c in authenticator.credentials() if c["userName"] == "dave"]
            assert len(held) == 1, held
            removed = admin("user", "remove-passkeys", "dave", "--all")
            assert "removed 1 passkey(s) of dave" in removed, removed
            # Without a username: by his name the options would list decoys (he has no passkey now), which the
            # browser's passkey does not match, so it would never reach the server.
            refused("not registered", "22-passkey-removed.png", username="")
            # The server said the credential is unknown: the page told the browser (signalUnknownCredential), and
            # Chromium's authenticator dropped the passkey, so it is not offered again.
            wanted = base64.urlsafe_b64encode(base64.b64decode(held[0]["credentialId"])).decode().rstrip("=")
            signals = driver.execute_script("return window.__signals;")
            assert {"name": "signalUnknownCredential", "argument": {"rpId": "localhost", "credentialId": wanted}} in signals, signals
            steps.wait.until(lambda _: not [c for c in authenticator.credentials() if c["userName"] == "dave"])
        steps.step("a passkey the admin removed: the sign-in is refused and the browser is told to forget it", removed_by_admin)

        def stranger_cannot_add_a_passkey():
            # Carol enrolled her phone: a fresh browser asking for a passkey for her is told to sign in first.
            authenticator.clear()
            steps.passkey_page("carol")
            driver.find_element(By.ID, "passkey-signup").click()
            state, text = steps.passkey_status(("error", "registered"))
            assert state == "error" and text.startswith("No passkey can be made for this username."), text
            assert "log in first" in text, text
            assert not authenticator.credentials(), authenticator.credentials()
            shown = json.loads(admin("user", "show", "carol", "--json"))
            assert not shown["passkeys"], shown
            steps.shot("23-passkey-stranger-refused.png")
        steps.step("takeover refused: a fresh browser cannot add a passkey to carol, who enrolled her phone", stranger_cannot_add_a_passkey)

        def passkey_then_phone():
            # Carol logs in with her phone at the passkeys' origin, adds a passkey from the page that welcomes her,
            # signs in with it, and confirms a payment on her phone (the step-up).
            steps.log_in("carol", page=PASSKEY_DEMO)
            steps.wait.until(EC.visibility_of_element_located((By.ID, "status")))
            approved = device("approve", "--pin", PIN)
            assert approved["approved"] is True, approved
            steps.wait_outcome("Transaction confirmed")
            # The automatic upgrade: where the browser offers conditional create, the page asks for it at once.
            capable = driver.execute_async_script(
                "var done = arguments[0]; (PublicKeyCredential.getClientCapabilities ? PublicKeyCredential.getClientCapabilities()"
                " : Promise.resolve({})).then(function (c) { done(!!c.conditionalCreate); });")
            if capable:
                steps.wait.until(lambda _: driver.find_element(By.ID, "add-passkey").get_attribute("data-upgrade"))
                created = [r for r in driver.execute_script("return window.__requests;") if r["name"] == "create"]
                assert created and created[-1]["mediation"] == "conditional", created
            print(f"     conditional create offered by this Chromium: {capable}; the page's upgrade: "
                  f"{driver.find_element(By.ID, 'add-passkey').get_attribute('data-upgrade')}")
            driver.find_element(By.ID, "add-passkey").click()
            state, text = steps.passkey_status(element_id="add-passkey-status")
            assert state == "registered", text
            driver.execute_script("document.getElementById('add-passkey-status').scrollIntoView();")
            steps.shot("24-passkey-added.png")
            steps.passkey_page("carol")
            driver.find_element(By.ID, "passkey-signin").click()
            steps.signed_in_with_passkey("carol")
            assert steps.text("summary").startswith("Welcome back, carol."), steps.text("summary")
            driver.find_element(By.ID, "step-up").click()
            assert driver.find_element(By.ID, "login-username").get_attribute("value") == "carol"
            driver.find_element(By.ID, "login-submit").click()
            steps.wait.until(EC.visibility_of_element_located((By.ID, "status")))
            approved = device("approve", "--pin", PIN)
            assert approved["approved"] is True and approved["transaction"] == MESSAGE, approved
            steps.wait_outcome("Transaction confirmed")
            steps.shot("25-passkey-then-phone.png")
        steps.step("carol logs in with her phone, adds a passkey there, signs in with it and confirms a payment on her phone", passkey_then_phone)

        def carol_removes_her_passkey():
            # Carol holds her phone's key too: her passkey may go, and the browser is told the list is empty.
            steps.passkey_page("carol")
            driver.find_element(By.ID, "passkey-signin").click()
            steps.signed_in_with_passkey("carol")
            steps.wait.until(lambda _: driver.find_element(By.ID, "passkey-list").get_attribute("data-count") == "1")
            driver.find_element(By.CSS_SELECTOR, "#passkey-list .passkey-remove").click()
            state, text = steps.passkey_status(element_id="passkey-list-status")
            assert state == "registered" and text == "Removed.", text
            assert driver.find_element(By.ID, "passkey-list").get_attribute("data-count") == "0"
            signals = driver.execute_script("return window.__signals;")
            accepted = [s["argument"] for s in signals if s["name"] == "signalAllAcceptedCredentials"]
            assert accepted[-1]["allAcceptedCredentialIds"] == [], signals
            shown = json.loads(admin("user", "show", "carol", "--json"))
            assert not shown["passkeys"] and shown["keys"], shown
            steps.shot("26-passkey-removed-by-carol.png")
        steps.step("carol removes her passkey: her phone remains, the page signals an empty list", carol_removes_her_passkey)
    finally:
        driver.quit()
    print(f"browser test: {steps.passed} passed, {steps.failed} failed (screenshots in {SHOTS})")
    return 1 if steps.failed or steps.passed == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
