import ArgumentParser
import Foundation
import MobileAuthentication
import NevisProtocol
import UAFTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `mauth device`: a persistent headless FIDO UAF device in a directory, driven from a shell or a CI job against any
/// nevisFIDO-compatible server. Each subcommand opens the device, runs one SDK operation and exits: 0 when it did
/// what was asked, 1 when it did not (the reason on standard error, and in the JSON with `--json`).
struct DeviceCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "device",
        abstract: "A headless FIDO UAF device kept in a directory: register, authenticate, approve, deregister from a shell.",
        discussion: """
            Every subcommand takes --dir (or MAUTH_DEVICE_DIR) and --json. PINs and passwords come from --pin/--password, \
            from MAUTH_DEVICE_PIN/MAUTH_DEVICE_PASSWORD (new ones: --new-pin/--new-password, MAUTH_DEVICE_NEW_PIN/\
            MAUTH_DEVICE_NEW_PASSWORD), or from a prompt when standard input is a terminal.
            """,
        subcommands: [DeviceInit.self, DeviceRegister.self, DeviceAuthenticate.self, DevicePending.self, DeviceApprove.self, DeviceDeny.self,
                      DeviceList.self, DeviceChangePin.self, DeviceChangePassword.self, DeviceDeregister.self, DeviceCheck.self, DeviceSync.self])
}

// MARK: - The device on disk

/// `device.json` in the device's directory: which server it talks to and who it is. The keys, accounts and PIN
/// verifiers live beside it in `storage/`, in the SDK's encrypted SecureStorage.
struct HeadlessDeviceProfile: Codable, Equatable {
    static let currentVersion = 1
    var version: Int
    /// The server's base URL (`https://host:port`); the SDK adds nevisFIDO's paths.
    var server: String
    /// PEM certificates trusted for this server besides the system's roots (a development certificate).
    var trustedCertificatesPEM: String?
    var facetId: String
    /// `ios` or `android`: fixes the AAIDs and sensors, as on a real phone.
    var profile: String
    var name: String
    /// Random per device: the simulated hardware binds the storage key to it.
    var fingerprint: String
    var pushToken: String?
}

/// Failures of `mauth device` that are not the SDK's: bad input, a missing device, a tool that is not installed.
struct DeviceCommandError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Options every subcommand shares.
struct DeviceOptions: ParsableArguments {
    @Option(name: .customLong("dir"), help: "The device's directory (default MAUTH_DEVICE_DIR).") var directory: String?
    @Flag(help: "Print one JSON object instead of text.") var json = false

    var directoryURL: URL {
        get throws {
            guard let path = directory ?? ProcessInfo.processInfo.environment["MAUTH_DEVICE_DIR"], !path.isEmpty else {
                throw DeviceCommandError("no device directory: pass --dir or set MAUTH_DEVICE_DIR")
            }
            return URL(fileURLWithPath: path)
        }
    }
}

/// An opened device: its profile and a running SDK client.
struct HeadlessDevice {
    static let profileFile = "device.json"
    let directory: URL
    let profile: HeadlessDeviceProfile

    static func open(_ options: DeviceOptions) throws -> HeadlessDevice {
        let directory = try options.directoryURL
        let file = directory.appendingPathComponent(profileFile)
        guard let data = FileManager.default.contents(atPath: file.path) else {
            throw DeviceCommandError("no device in \(directory.path): run `mauth device init --dir \(directory.path) --server URL` first")
        }
        let profile: HeadlessDeviceProfile
        do { profile = try JSONDecoder().decode(HeadlessDeviceProfile.self, from: data) } catch {
            throw DeviceCommandError("\(file.path) is not a device profile: \(error)")
        }
        guard profile.version == HeadlessDeviceProfile.currentVersion else {
            throw DeviceCommandError("\(file.path) has version \(profile.version); this mauth reads version \(HeadlessDeviceProfile.currentVersion)")
        }
        return HeadlessDevice(directory: directory, profile: profile)
    }

    var platform: SimulatedPlatform {
        SimulatedPlatform(storageDirectory: directory.appendingPathComponent("storage"), applicationFacetId: profile.facetId,
                          deviceFingerprint: profile.fingerprint, deviceProfile: profile.profile == "android" ? .android : .ios)
    }

    var deviceInformation: DeviceInformation { DeviceInformation(name: profile.name, fcmRegistrationToken: profile.pushToken) }

    /// Runs `body` with a client of this device and shuts the client down afterwards.
    func withClient<T>(_ body: (any MobileAuthenticationClient) async throws -> T) async throws -> T {
        guard let baseURL = URL(string: profile.server) else { throw DeviceCommandError("the device's server URL \(profile.server) is not a URL") }
        // A headless device has no one to wait for: answers come from the command line, so a short interaction timeout.
        var configuration = Configuration(baseUrl: baseURL, networkTimeoutInSeconds: 30, userInteractionTimeoutInSeconds: 30, facetId: profile.facetId)
        if let pem = profile.trustedCertificatesPEM { configuration = configuration.withTransportSecurity(.debug(trustedCertificatesPEM: [pem])) }
        let client = try await MobileAuthenticationClientInitializer().configuration(configuration).platform(platform).executeAsync()
        do {
            let result = try await body(client)
            await client.shutdown()
            return result
        } catch {
            await client.shutdown()
            throw error
        }
    }
}

// MARK: - Output

/// What a subcommand reports: lines for a person, one JSON object for a script.
struct DeviceReport {
    var lines: [String] = []
    var fields: [String: Any] = [:]

    mutating func line(_ text: String) { lines.append(text) }
    subscript(key: String) -> Any? {
        get { fields[key] }
        set { fields[key] = newValue }
    }

    func emit(json: Bool, command: String) {
        if json {
            var object = fields
            object["ok"] = true
            object["command"] = command
            say(Self.jsonText(object))
        } else {
            lines.forEach(say)
        }
    }

    static func jsonText(_ object: [String: Any]) -> String {
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }
}

/// Runs a subcommand's body: prints its report, or the failure (standard error, and JSON on standard output with
/// `--json`) and exits 1.
func runDeviceCommand(_ name: String, json: Bool, _ body: () async throws -> DeviceReport) async throws {
    do {
        try await body().emit(json: json, command: name)
    } catch {
        let message = DeviceFailureText.describe(error)
        note("mauth device \(name): \(message)")
        if json { say(DeviceReport.jsonText(["ok": false, "command": name, "error": message])) }
        throw ExitCode.failure
    }
}

enum DeviceFailureText {
    /// A readable reason: the SDK's errors say which case and why.
    static func describe(_ error: any Error) -> String {
        if let error = error as? DeviceCommandError { return error.description }
        if let error = error as? ValidationError { return error.message }
        if let error = error as? LocalizedError, let text = error.errorDescription { return "\(text) (\(String(describing: error)))" }
        return String(describing: error)
    }
}

// MARK: - Secrets and authenticators

/// A PIN or password: the flag, then the environment variable, then a prompt on a terminal. Never a default.
func deviceSecret(_ flag: String?, environment variable: String, prompt: String) throws -> String {
    if let flag { return flag }
    if let value = ProcessInfo.processInfo.environment[variable] { return value }
    guard isatty(STDIN_FILENO) == 1 else {
        throw DeviceCommandError("no \(prompt.lowercased()): pass it as an option, set \(variable), or run in a terminal to be asked")
    }
    guard let typed = getpass("\(prompt): ") else { throw DeviceCommandError("no \(prompt.lowercased()) was typed") }
    return String(cString: typed)
}

/// The kinds of authenticator a command line names; the AAID follows from the device profile (iOS `F1D0#100x`,
/// Android `F1D0#000x`), so the last digit identifies the kind.
enum DeviceAuthenticatorKind: String, ExpressibleByArgument, CaseIterable {
    case pin, password, biometric, fingerprint, passcode

    var aaidSuffix: String {
        switch self {
        case .pin: return "1"
        case .fingerprint: return "2"
        case .biometric: return "3"
        case .passcode: return "4"
        case .password: return "5"
        }
    }

    func matches(_ aaid: String) -> Bool { aaid.hasPrefix("F1D0#") && aaid.hasSuffix(aaidSuffix) }

    static func of(_ aaid: String) -> String {
        allCases.first { $0.matches(aaid) }?.rawValue ?? aaid
    }
}

/// The device's "screen": picks the requested authenticator (or the first registered and allowed one), or
/// declines, and remembers the transaction text it was shown, which the command prints.
final class HeadlessSelector: AuthenticatorSelector, @unchecked Sendable {
    private let lock = NSLock()
    private let kind: DeviceAuthenticatorKind?
    let approve: Bool
    private let registering: Bool
    private var shown: (username: String, transaction: String?, aaid: String?)?

    init(kind: DeviceAuthenticatorKind?, approve: Bool = true, registering: Bool = false) {
        self.kind = kind; self.approve = approve; self.registering = registering
    }

    var shownUsername: String? { lock.withLock { shown?.username } }
    var shownTransaction: String? { lock.withLock { shown?.transaction } }
    var chosenAaid: String? { lock.withLock { shown?.aaid } }

    func selectAuthenticator(context: any AuthenticatorSelectionContext, handler: any AuthenticatorSelectionHandler) {
        let username = context.account.username
        let candidates = context.authenticators.filter { authenticator in
            context.isPolicyCompliant(authenticatorAaid: authenticator.aaid)
                && (registering || authenticator.registration.isRegistered(username))
                && (kind?.matches(authenticator.aaid) ?? true)
        }
        let choice = candidates.first?.aaid
        lock.withLock {
            shown = (username, context.transactionConfirmationData.map { String(decoding: $0, as: UTF8.self) }, approve ? choice : nil)
        }
        if approve, let choice { handler.aaid(choice) } else { handler.cancel() }
    }
}

/// The user-verification answers a command line carries: one PIN or password (a wrong one is asked for again,
/// and the script then cancels instead of waiting), biometrics and the device passcode always accepted. It keeps
/// what it was shown, so a cancellation after a refused PIN is reported as that, not as "the user cancelled".
struct HeadlessAnswers {
    var pin: String?
    var password: String?
    let pinVerifier: ScriptedPinUserVerifier
    let passwordVerifier: ScriptedPasswordUserVerifier
    let osVerifier = ScriptedOSVerifier()
    let pinEnroller: ScriptedPinEnroller
    let passwordEnroller: ScriptedPasswordEnroller

    init(pin: String? = nil, password: String? = nil) {
        self.pin = pin; self.password = password
        pinVerifier = ScriptedPinUserVerifier(pins: [pin, nil])
        passwordVerifier = ScriptedPasswordUserVerifier(passwords: [password, nil])
        pinEnroller = ScriptedPinEnroller(pins: [pin, nil])
        passwordEnroller = ScriptedPasswordEnroller(passwords: [password, nil])
    }

    /// Reads only the secret the chosen authenticator needs (a biometric registration asks for none).
    static func read(kind: DeviceAuthenticatorKind?, pin: String?, password: String?) throws -> HeadlessAnswers {
        switch kind {
        case .pin: return HeadlessAnswers(pin: try deviceSecret(pin, environment: "MAUTH_DEVICE_PIN", prompt: "PIN"))
        case .password: return HeadlessAnswers(password: try deviceSecret(password, environment: "MAUTH_DEVICE_PASSWORD", prompt: "Password"))
        case .biometric, .fingerprint, .passcode: return HeadlessAnswers()
        case nil:
            // Any registered authenticator may be chosen: take what was given, ask for nothing.
            return HeadlessAnswers(pin: pin ?? ProcessInfo.processInfo.environment["MAUTH_DEVICE_PIN"],
                                   password: password ?? ProcessInfo.processInfo.environment["MAUTH_DEVICE_PASSWORD"])
        }
    }

    /// Runs `body`; when it fails after a PIN or password was asked for a second time, the real reason replaces
    /// the SDK's "cancelled" (the script cancels the second question).
    func explaining<T>(_ body: () async throws -> T) async throws -> T {
        do { return try await body() } catch {
            if pinEnroller.shownContexts.count > 1 {
                throw DeviceCommandError("the PIN was refused: \(pinEnroller.shownContexts.last?.lastRecoverableError.map { String(describing: $0) } ?? "policy")")
            }
            if passwordEnroller.shownContexts.count > 1 {
                throw DeviceCommandError("the password was refused: \(passwordEnroller.shownContexts.last?.lastRecoverableError.map { String(describing: $0) } ?? "policy")")
            }
            if let last = pinVerifier.shownContexts.last, pinVerifier.shownContexts.count > 1 {
                throw DeviceCommandError("wrong PIN (\(last.authenticatorProtectionStatus))")
            }
            if let last = passwordVerifier.shownContexts.last, passwordVerifier.shownContexts.count > 1 {
                throw DeviceCommandError("wrong password (\(last.authenticatorProtectionStatus))")
            }
            if pinVerifier.shownContexts.count == 1 && pin == nil { throw DeviceCommandError("a PIN is needed: pass --pin or set MAUTH_DEVICE_PIN") }
            if passwordVerifier.shownContexts.count == 1 && password == nil {
                throw DeviceCommandError("a password is needed: pass --password or set MAUTH_DEVICE_PASSWORD")
            }
            throw error
        }
    }
}

/// Options of the commands that verify the user: which authenticator, and its PIN or password.
struct VerificationOptions: ParsableArguments {
    @Option(help: "Authenticator: \(DeviceAuthenticatorKind.allCases.map(\.rawValue).joined(separator: ", ")).") var authenticator: DeviceAuthenticatorKind?
    @Option(help: "The PIN (or MAUTH_DEVICE_PIN, or a prompt).") var pin: String?
    @Option(help: "The password (or MAUTH_DEVICE_PASSWORD, or a prompt).") var password: String?
}

/// Where an out-of-band payload comes from: a QR code image, the scanned text, or a pending operation.
struct PayloadOptions: ParsableArguments {
    @Option(help: "A PNG with the QR code to scan (read with zbarimg).") var qrImage: String?
    @Option(help: "The scanned or pushed payload: base64url, JSON, or an app link.") var payload: String?

    /// The text a camera would read, if a source was given.
    func scannedText() throws -> String? {
        if qrImage != nil && payload != nil { throw DeviceCommandError("give either --qr-image or --payload, not both") }
        if let payload { return payload.trimmingCharacters(in: .whitespacesAndNewlines) }
        guard let qrImage else { return nil }
        guard let png = FileManager.default.contents(atPath: qrImage) else { throw DeviceCommandError("cannot read \(qrImage)") }
        guard QRCodeReader.isInstalled else { throw DeviceCommandError("reading a QR image needs zbarimg (Debian: apt-get install zbar-tools)") }
        return try QRCodeReader.read(png: Array(png))
    }
}

/// Runs what a scanned or pushed payload stands for. An app link (`…?dispatchTokenResponse=…`) goes through
/// `AuthCloudApiRegistration`; anything else is decoded as an out-of-band payload and redeemed.
struct OutOfBandRunner {
    let device: HeadlessDevice
    let client: any MobileAuthenticationClient
    let selector: HeadlessSelector
    let answers: HeadlessAnswers

    /// `enrolling`: an app link is an Auth Cloud enrollment, run by `AuthCloudApiRegistration` (as the app
    /// does); otherwise the link is redeemed like any other payload (an approval's QR code is such a link): the
    /// SDK's base64url decoder takes the payload out of a link's `dispatchTokenResponse` itself.
    func run(_ text: String, enrolling: Bool, report: inout DeviceReport) async throws {
        if text.hasPrefix("https://") || text.hasPrefix("http://") {
            guard text.contains("\(DispatchPayload.linkParameter)=") else {
                throw DeviceCommandError("\(text.prefix(60)) is a link but not an app link (no \(DispatchPayload.linkParameter))")
            }
            if enrolling { return try await authCloudRegistration(appLink: text, enrollResponse: nil, report: &report) }
        }
        let decode = client.operations.outOfBandPayloadDecode
        let payload = try await (text.hasPrefix("{") ? decode.json(text) : decode.base64UrlEncoded(text)).executeAsync()
        try await run(payload, report: &report)
    }

    func run(_ payload: OutOfBandPayload, report: inout DeviceReport) async throws {
        switch try await client.operations.outOfBandOperation.payload(payload).executeAsync() {
        case .registration(let registration):
            let username = registration.username ?? "?"
            try await registration.deviceInformation(device.deviceInformation).authenticatorSelector(selector)
                .pinEnroller(answers.pinEnroller).passwordEnroller(answers.passwordEnroller)
                .biometricUserVerifier(answers.osVerifier).devicePasscodeUserVerifier(answers.osVerifier).fingerprintUserVerifier(answers.osVerifier)
                .executeAsync()
            reportRegistration(username: username, report: &report)
        case .authentication(let authentication):
            var approved = true
            do {
                _ = try await authentication.authenticatorSelector(selector).pinUserVerifier(answers.pinVerifier)
                    .passwordUserVerifier(answers.passwordVerifier).biometricUserVerifier(answers.osVerifier)
                    .devicePasscodeUserVerifier(answers.osVerifier).fingerprintUserVerifier(answers.osVerifier).executeAsync()
            } catch {
                // Declined on purpose (deny): the SDK reports the cancellation; the command did what was asked.
                guard !selector.approve, selector.shownUsername != nil, Self.isCancellation(error) else { throw error }
                approved = false
            }
            reportAuthentication(approved: approved, report: &report)
        case .deregistration(let usernames):
            report["operation"] = "deregistration"; report["usernames"] = usernames
            report.line("deregistered \(usernames.joined(separator: ", ")) as the server asked")
        }
    }

    static func isCancellation(_ error: any Error) -> Bool {
        guard let error = error as? OperationError, case .FidoError(.userCanceled, _) = error else { return false }
        return true
    }

    private func reportAuthentication(approved: Bool, report: inout DeviceReport) {
        let username = selector.shownUsername ?? "?"
        report["operation"] = "authentication"; report["username"] = username; report["approved"] = approved
        if let text = selector.shownTransaction { report["transaction"] = text; report.line("transaction shown: \(text)") }
        if approved {
            report["aaid"] = selector.chosenAaid ?? ""
            report.line("approved for \(username) with \(DeviceAuthenticatorKind.of(selector.chosenAaid ?? "?"))")
        } else {
            report.line("denied for \(username): nothing was signed")
        }
    }

    func authCloudRegistration(appLink: String?, enrollResponse: String?, report: inout DeviceReport) async throws {
        var registration = client.operations.authCloudApiRegistration
        if let appLink { registration = registration.appLinkUri(appLink) }
        if let enrollResponse { registration = registration.enrollResponse(enrollResponse) }
        try await registration.deviceInformation(device.deviceInformation).authenticatorSelector(selector)
            .pinEnroller(answers.pinEnroller).passwordEnroller(answers.passwordEnroller)
            .biometricUserVerifier(answers.osVerifier).devicePasscodeUserVerifier(answers.osVerifier).executeAsync()
        reportRegistration(username: selector.shownUsername ?? "?", how: " (Auth Cloud enrollment)", report: &report)
    }

    /// What every kind of registration reports: the user, the authenticator the selector chose, the server.
    func reportRegistration(username: String, how: String = "", report: inout DeviceReport) {
        let aaid = selector.chosenAaid ?? "?"
        report["operation"] = "registration"; report["username"] = username; report["aaid"] = selector.chosenAaid ?? ""
        report.line("registered \(username) with \(DeviceAuthenticatorKind.of(aaid)) (\(aaid)) on \(device.profile.server)\(how)")
    }
}

// MARK: - Subcommands

struct DeviceInit: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "init", abstract: "Create a device in a directory.")
    @OptionGroup var options: DeviceOptions
    @Option(help: "The server's base URL, https://host:port.") var server: String
    @Option(help: "A PEM file to trust for this server (its development certificate).") var caFile: String?
    @Option(help: "Device profile: ios or android.") var profile = "ios"
    @Option(help: "The device's name, shown in the user's list of devices.") var name = "mauth headless device"
    @Option(help: "The push (FCM registration) token to publish.") var pushToken: String?
    @Option(help: "The app's facet ID.") var facetId = "ios:bundle-id:ch.nevis.mauth.virtualdevice"

    func run() async throws {
        try await runDeviceCommand("init", json: options.json) {
            let directory = try options.directoryURL
            guard let url = URL(string: server), url.scheme == "https", url.host != nil else {
                throw DeviceCommandError("--server must be an https:// URL")
            }
            guard profile == "ios" || profile == "android" else { throw DeviceCommandError("--profile must be ios or android") }
            let file = directory.appendingPathComponent(HeadlessDevice.profileFile)
            // Never overwrite: the old keys would stay in storage/ under a new fingerprint, unusable and unremovable.
            guard !FileManager.default.fileExists(atPath: file.path) else { throw DeviceCommandError("\(directory.path) already holds a device") }
            var pem: String?
            if let caFile {
                guard let data = FileManager.default.contents(atPath: caFile), let text = String(data: data, encoding: .utf8),
                      text.contains("-----BEGIN CERTIFICATE-----") else { throw DeviceCommandError("\(caFile) is not a PEM certificate file") }
                pem = text
            }
            let device = HeadlessDeviceProfile(version: HeadlessDeviceProfile.currentVersion, server: server.hasSuffix("/") ? String(server.dropLast()) : server,
                                               trustedCertificatesPEM: pem, facetId: facetId, profile: profile, name: name,
                                               fingerprint: UUID().uuidString.lowercased(), pushToken: pushToken)
            try FileManager.default.createDirectory(at: directory.appendingPathComponent("storage"), withIntermediateDirectories: true)
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            try encoder.encode(device).write(to: file, options: .atomic)
            var report = DeviceReport()
            report["directory"] = directory.path; report["server"] = device.server; report["profile"] = profile; report["name"] = name
            report.line("device \"\(name)\" (\(profile)) created in \(directory.path) for \(device.server)")
            return report
        }
    }
}

struct DeviceRegister: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "register",
        abstract: "Register a user: by username with a JWT or cookie, from a QR image or payload, or from an Auth Cloud enroll response or app link.")
    @OptionGroup var options: DeviceOptions
    @OptionGroup var verification: VerificationOptions
    @OptionGroup var source: PayloadOptions
    @Option(help: "Register this username in band (with --jwt or --cookie).") var username: String?
    @Option(help: "The relying party's JWT for the username (or MAUTH_DEVICE_JWT).") var jwt: String?
    @Option(help: "A session cookie, name=value.") var cookie: String?
    @Option(help: "An Auth Cloud enroll response (JSON, or @file).") var enrollResponse: String?
    @Option(help: "An Auth Cloud app link (appLinkUri).") var appLink: String?

    func run() async throws {
        try await runDeviceCommand("register", json: options.json) {
            let scanned = try source.scannedText()
            let sources = [username != nil, scanned != nil, enrollResponse != nil, appLink != nil].filter { $0 }.count
            guard sources == 1 else {
                throw DeviceCommandError("give exactly one of --username, --qr-image, --payload, --enroll-response, --app-link")
            }
            let kind = verification.authenticator ?? .pin
            let answers = try HeadlessAnswers.read(kind: kind, pin: verification.pin, password: verification.password)
            let device = try HeadlessDevice.open(options)
            let selector = HeadlessSelector(kind: kind, registering: true)
            return try await answers.explaining { try await device.withClient { client in
                var report = DeviceReport()
                let runner = OutOfBandRunner(device: device, client: client, selector: selector, answers: answers)
                if let username {
                    var registration = client.operations.registration.username(username).deviceInformation(device.deviceInformation)
                        .authenticatorSelector(selector).pinEnroller(answers.pinEnroller).passwordEnroller(answers.passwordEnroller)
                        .biometricUserVerifier(answers.osVerifier).devicePasscodeUserVerifier(answers.osVerifier)
                        .fingerprintUserVerifier(answers.osVerifier)
                    if let jwt = jwt ?? ProcessInfo.processInfo.environment["MAUTH_DEVICE_JWT"] {
                        registration = registration.authorizationProvider(JwtAuthorizationProvider(jwt: jwt))
                    } else if let cookie {
                        let parts = cookie.split(separator: "=", maxSplits: 1).map(String.init)
                        guard parts.count == 2, let host = URL(string: device.profile.server)?.host,
                              let value = HTTPCookie(properties: [.name: parts[0], .value: parts[1], .domain: host, .path: "/"]) else {
                            throw DeviceCommandError("--cookie must be name=value")
                        }
                        registration = registration.authorizationProvider(CookieAuthorizationProvider([value]))
                    }
                    try await registration.executeAsync()
                    runner.reportRegistration(username: username, report: &report)
                } else if let scanned {
                    try await runner.run(scanned, enrolling: true, report: &report)
                } else if let appLink {
                    try await runner.authCloudRegistration(appLink: appLink, enrollResponse: nil, report: &report)
                } else if let enrollResponse {
                    let text = try enrollResponse.hasPrefix("@") ? String(contentsOfFile: String(enrollResponse.dropFirst()), encoding: .utf8) : enrollResponse
                    try await runner.authCloudRegistration(appLink: nil, enrollResponse: text, report: &report)
                }
                return report
            } }
        }
    }
}

struct DeviceAuthenticate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "authenticate", abstract: "Log in (in band), optionally confirming a transaction text.")
    @OptionGroup var options: DeviceOptions
    @OptionGroup var verification: VerificationOptions
    @Option(help: "The user to authenticate (default: the device's only account).") var username: String?
    @Option(help: "A transaction text to confirm.") var transaction: String?

    func run() async throws {
        try await runDeviceCommand("authenticate", json: options.json) {
            let answers = try HeadlessAnswers.read(kind: verification.authenticator, pin: verification.pin, password: verification.password)
            let device = try HeadlessDevice.open(options)
            let selector = HeadlessSelector(kind: verification.authenticator)
            return try await answers.explaining { try await device.withClient { client in
                let username = try username ?? onlyAccount(client)
                var authentication = client.operations.authentication.username(username).authenticatorSelector(selector)
                    .pinUserVerifier(answers.pinVerifier).passwordUserVerifier(answers.passwordVerifier).biometricUserVerifier(answers.osVerifier)
                    .devicePasscodeUserVerifier(answers.osVerifier).fingerprintUserVerifier(answers.osVerifier)
                if let transaction { authentication = authentication.transactionConfirmation(text: transaction) }
                let provider = try await authentication.executeAsync()
                var report = DeviceReport()
                report["username"] = username; report["aaid"] = selector.chosenAaid ?? ""
                report.line("authenticated \(username) with \(DeviceAuthenticatorKind.of(selector.chosenAaid ?? "?")) (\(selector.chosenAaid ?? "?"))")
                if let transaction { report["transaction"] = transaction; report.line("transaction confirmed: \(transaction)") }
                if let jwt = provider as? JwtAuthorizationProvider {
                    report["token"] = jwt.jwt
                    report.line("token: \(jwt.jwt)")
                } else if let cookies = provider as? CookieAuthorizationProvider {
                    report["cookies"] = cookies.cookies.map { "\($0.name)=\($0.value)" }
                    report.line("session cookie(s): \(cookies.cookies.map(\.name).joined(separator: ", "))")
                }
                return report
            } }
        }
    }
}

/// The username of the device's only account, or an error that lists them.
func onlyAccount(_ client: any MobileAuthenticationClient) throws -> String {
    let usernames = Array(Set(client.localData.accounts.map(\.username))).sorted()
    guard usernames.count == 1 else {
        throw DeviceCommandError(usernames.isEmpty ? "the device has no account: register first" : "the device has several accounts (\(usernames.joined(separator: ", "))): pass --username")
    }
    return usernames[0]
}

/// Approves or denies one out-of-band operation: from a QR image or payload, or else the newest pending one.
struct OutOfBandDecision {
    let approve: Bool

    func run(options: DeviceOptions, answers: HeadlessAnswers, kind: DeviceAuthenticatorKind?, source: PayloadOptions, index: Int?) async throws -> DeviceReport {
        let scanned = try source.scannedText()
        let device = try HeadlessDevice.open(options)
        let selector = HeadlessSelector(kind: kind, approve: approve)
        return try await answers.explaining { try await device.withClient { client in
            var report = DeviceReport()
            let runner = OutOfBandRunner(device: device, client: client, selector: selector, answers: answers)
            if let scanned {
                try await runner.run(scanned, enrolling: false, report: &report)
                return report
            }
            let pending = await client.operations.pendingOutOfBandOperations.executeAsync()
            if let error = pending.errors.first { throw DeviceCommandError("fetching pending operations failed: \(DeviceFailureText.describe(error))") }
            let operations = pending.operations.sorted { $0.creationTime < $1.creationTime }
            guard !operations.isEmpty else { throw DeviceCommandError("no pending operation (and no --qr-image or --payload)") }
            let position = index ?? operations.count
            guard (1...operations.count).contains(position) else { throw DeviceCommandError("--index must be 1...\(operations.count)") }
            report["pending"] = operations.count
            try await runner.run(operations[position - 1].payload, report: &report)
            return report
        } }
    }
}

struct DeviceApprove: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "approve", abstract: "Approve an out-of-band operation: a QR code, a pushed payload, or the newest pending one.")
    @OptionGroup var options: DeviceOptions
    @OptionGroup var verification: VerificationOptions
    @OptionGroup var source: PayloadOptions
    @Option(help: "Which pending operation (1 = oldest; default the newest).") var index: Int?

    func run() async throws {
        try await runDeviceCommand("approve", json: options.json) {
            let answers = try HeadlessAnswers.read(kind: verification.authenticator, pin: verification.pin, password: verification.password)
            return try await OutOfBandDecision(approve: true).run(options: options, answers: answers, kind: verification.authenticator, source: source, index: index)
        }
    }
}

struct DeviceDeny: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "deny", abstract: "Decline an out-of-band authentication: nothing is signed.")
    @OptionGroup var options: DeviceOptions
    @OptionGroup var source: PayloadOptions
    @Option(help: "Which pending operation (1 = oldest; default the newest).") var index: Int?

    func run() async throws {
        try await runDeviceCommand("deny", json: options.json) {
            try await OutOfBandDecision(approve: false).run(options: options, answers: HeadlessAnswers(), kind: nil, source: source, index: index)
        }
    }
}

struct DevicePending: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pending", abstract: "List the operations waiting for this device on its server (approve or deny them with those commands).")
    @OptionGroup var options: DeviceOptions

    func run() async throws {
        try await runDeviceCommand("pending", json: options.json) {
            let device = try HeadlessDevice.open(options)
            return try await device.withClient { client in
                let pending = await client.operations.pendingOutOfBandOperations.executeAsync()
                if let error = pending.errors.first { throw DeviceCommandError("fetching pending operations failed: \(DeviceFailureText.describe(error))") }
                let formatter = ISO8601DateFormatter()
                let operations = pending.operations.sorted { $0.creationTime < $1.creationTime }
                var report = DeviceReport()
                report["operations"] = operations.enumerated().map { index, operation in
                    ["index": index + 1, "createdAt": formatter.string(from: operation.creationTime), "dispatcher": operation.dispatcherName,
                     "server": operation.server.baseUrl.absoluteString] as [String: Any]
                }
                report.line(operations.isEmpty ? "no pending operation" : "\(operations.count) pending operation(s):")
                for (index, operation) in operations.enumerated() {
                    report.line("  \(index + 1). \(formatter.string(from: operation.creationTime)) by \(operation.dispatcherName)")
                }
                return report
            }
        }
    }
}

struct DeviceList: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "Show the device: accounts, authenticators, device information.")
    @OptionGroup var options: DeviceOptions

    func run() async throws {
        try await runDeviceCommand("list", json: options.json) {
            let device = try HeadlessDevice.open(options)
            return try await device.withClient { client in
                var report = DeviceReport()
                let profile = device.profile
                report["device"] = ["name": profile.name, "profile": profile.profile, "server": profile.server, "facetId": profile.facetId,
                                    "pushToken": profile.pushToken ?? NSNull()] as [String: Any]
                report.line("device \"\(profile.name)\" (\(profile.profile)), server \(profile.server)")
                let accounts = client.localData.accounts
                report["accounts"] = accounts.map { ["username": $0.username, "server": $0.server.baseUrl.absoluteString] }
                report.line(accounts.isEmpty ? "accounts: none" : "accounts: \(accounts.map(\.username).joined(separator: ", "))")
                let authenticators = client.localData.authenticators
                report["authenticators"] = authenticators.map { authenticator in
                    ["aaid": authenticator.aaid, "kind": DeviceAuthenticatorKind.of(authenticator.aaid),
                     "registeredUsers": authenticator.registration.registeredAccounts.map(\.username),
                     "supported": authenticator.isSupportedByHardware] as [String: Any]
                }
                for authenticator in authenticators where authenticator.isSupportedByHardware {
                    let users = authenticator.registration.registeredAccounts.map(\.username)
                    report.line("  \(authenticator.aaid) \(DeviceAuthenticatorKind.of(authenticator.aaid)): \(users.isEmpty ? "not registered" : users.joined(separator: ", "))")
                }
                if let information = client.localData.deviceInformation {
                    report["deviceInformation"] = ["name": information.name, "deviceId": information.deviceId,
                                                   "fcmRegistrationToken": information.fcmRegistrationToken ?? NSNull(),
                                                   "dispatchTargets": information.idUsernamePairs.map { ["id": $0.identifier, "username": $0.username] }] as [String: Any]
                    report.line("device information: \(information.name), id \(information.deviceId), push \(information.fcmRegistrationToken ?? "off"), \(information.idUsernamePairs.count) dispatch target(s)")
                } else {
                    report.line("device information: none published")
                }
                return report
            }
        }
    }
}

struct DeviceChangePin: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "change-pin", abstract: "Change the PIN of a user's PIN authenticator.")
    @OptionGroup var options: DeviceOptions
    @Option(help: "The user (default: the device's only account).") var username: String?
    @Option(help: "The current PIN (or MAUTH_DEVICE_PIN, or a prompt).") var pin: String?
    @Option(help: "The new PIN (or MAUTH_DEVICE_NEW_PIN, or a prompt).") var newPin: String?

    func run() async throws {
        try await runDeviceCommand("change-pin", json: options.json) {
            let old = try deviceSecret(pin, environment: "MAUTH_DEVICE_PIN", prompt: "Current PIN")
            let new = try deviceSecret(newPin, environment: "MAUTH_DEVICE_NEW_PIN", prompt: "New PIN")
            let device = try HeadlessDevice.open(options)
            return try await device.withClient { client in
                let username = try username ?? onlyAccount(client)
                try await client.operations.pinChange.username(username).pinChanger(ScriptedPinChanger(pins: [(old, new), nil])).executeAsync()
                var report = DeviceReport()
                report["username"] = username
                report.line("PIN changed for \(username)")
                return report
            }
        }
    }
}

struct DeviceChangePassword: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "change-password", abstract: "Change the password of a user's password authenticator.")
    @OptionGroup var options: DeviceOptions
    @Option(help: "The user (default: the device's only account).") var username: String?
    @Option(help: "The current password (or MAUTH_DEVICE_PASSWORD, or a prompt).") var password: String?
    @Option(help: "The new password (or MAUTH_DEVICE_NEW_PASSWORD, or a prompt).") var newPassword: String?

    func run() async throws {
        try await runDeviceCommand("change-password", json: options.json) {
            let old = try deviceSecret(password, environment: "MAUTH_DEVICE_PASSWORD", prompt: "Current password")
            let new = try deviceSecret(newPassword, environment: "MAUTH_DEVICE_NEW_PASSWORD", prompt: "New password")
            let device = try HeadlessDevice.open(options)
            return try await device.withClient { client in
                let username = try username ?? onlyAccount(client)
                try await client.operations.passwordChange.username(username).passwordChanger(ScriptedPasswordChanger(passwords: [(old, new), nil])).executeAsync()
                var report = DeviceReport()
                report["username"] = username
                report.line("password changed for \(username)")
                return report
            }
        }
    }
}

struct DeviceDeregister: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "deregister", abstract: "Deregister a user's authenticator (or all of them) on the server and on the device.")
    @OptionGroup var options: DeviceOptions
    @Option(help: "The user (default: the device's only account).") var username: String?
    @Option(help: "Only this authenticator (default: all of the user's).") var authenticator: DeviceAuthenticatorKind?
    @Option(help: "The relying party's JWT (default: the device signs the request itself).") var jwt: String?

    func run() async throws {
        try await runDeviceCommand("deregister", json: options.json) {
            let device = try HeadlessDevice.open(options)
            return try await device.withClient { client in
                let username = try username ?? onlyAccount(client)
                var deregistration = client.operations.deregistration.username(username)
                if let authenticator {
                    guard let aaid = client.localData.authenticators.first(where: { authenticator.matches($0.aaid) && $0.registration.isRegistered(username) })?.aaid else {
                        throw DeviceCommandError("\(username) has no \(authenticator.rawValue) authenticator on this device")
                    }
                    deregistration = deregistration.aaid(aaid)
                }
                // Without a JWT the device authorizes the removal with its own dispatch-target key (Device-Signature).
                let provider: any AuthorizationProvider = (jwt ?? ProcessInfo.processInfo.environment["MAUTH_DEVICE_JWT"]).map { JwtAuthorizationProvider(jwt: $0) }
                    ?? JwsAuthorizationProvider()
                try await deregistration.authorizationProvider(provider).executeAsync()
                var report = DeviceReport()
                report["username"] = username; report["authenticator"] = authenticator?.rawValue ?? "all"
                report.line("deregistered \(username) (\(authenticator?.rawValue ?? "all authenticators"))")
                return report
            }
        }
    }
}

struct DeviceCheck: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "check", abstract: "Compare the device information with what the server holds.")
    @OptionGroup var options: DeviceOptions

    func run() async throws {
        try await runDeviceCommand("check", json: options.json) {
            let device = try HeadlessDevice.open(options)
            return try await device.withClient { client in
                let result = await client.operations.deviceInformationCheck.executeAsync()
                if let error = result.errors.first { throw DeviceCommandError("the check failed: \(DeviceFailureText.describe(error))") }
                var report = DeviceReport()
                report["mismatches"] = result.mismatches.map { String(describing: $0) }
                report.line(result.mismatches.isEmpty ? "in sync with the server" : "\(result.mismatches.count) mismatch(es):")
                result.mismatches.forEach { report.line("  \($0)") }
                return report
            }
        }
    }
}

struct DeviceSync: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "sync", abstract: "Repair what `check` finds: the server and the device agree afterwards.")
    @OptionGroup var options: DeviceOptions

    func run() async throws {
        try await runDeviceCommand("sync", json: options.json) {
            let device = try HeadlessDevice.open(options)
            return try await device.withClient { client in
                let check = await client.operations.deviceInformationCheck.executeAsync()
                if let error = check.errors.first { throw DeviceCommandError("the check failed: \(DeviceFailureText.describe(error))") }
                var report = DeviceReport()
                report["repaired"] = check.mismatches.map { String(describing: $0) }
                guard !check.mismatches.isEmpty else {
                    report.line("nothing to repair: in sync with the server")
                    return report
                }
                let sync = await client.operations.deviceInformationSync.mismatches(check.mismatches).executeAsync()
                if let error = sync.errors.first { throw DeviceCommandError("the sync failed: \(DeviceFailureText.describe(error))") }
                report.line("repaired \(check.mismatches.count) mismatch(es)")
                return report
            }
        }
    }
}
