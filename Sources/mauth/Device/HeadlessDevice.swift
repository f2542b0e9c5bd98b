import ArgumentParser
import FIDOSimulation
import Foundation
import MobileAuthentication
import MobileAuthenticationSimulator
import Primitives

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

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
    /// How the device proves its app genuine when a server asks: `app-attest` (iOS) or `play-integrity` (Android),
    /// its keys in `app-attestation/`; nil: it answers no ask.
    var appAttestation: String?
}

/// Failures of `mauth device` that are not the SDK's: bad input, a missing device, a tool that is not installed.
struct DeviceCommandError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }

    /// The bytes of a file the command was given, or the error that names it and says why it cannot be read.
    static func readFile(_ path: String) throws -> Data {
        do { return try Data(contentsOf: URL(fileURLWithPath: path)) } catch {
            throw DeviceCommandError("cannot read \(path): \(SystemErrorText.reason(error))")
        }
    }
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
            throw DeviceCommandError("\(file.path) is damaged (not a device profile): make the device again with mauth device init")
        }
        guard profile.version == HeadlessDeviceProfile.currentVersion else {
            throw DeviceCommandError("\(file.path) has version \(profile.version); this mauth reads version \(HeadlessDeviceProfile.currentVersion)")
        }
        return HeadlessDevice(directory: directory, profile: profile)
    }

    /// Writes `profile` as the device's `device.json`, atomically: a crash leaves the old one or the new one.
    static func write(_ profile: HeadlessDeviceProfile, to directory: URL) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try encoder.encode(profile).write(to: directory.appendingPathComponent(profileFile), options: .atomic)
    }

    var platform: SimulatedPlatform {
        SimulatedPlatform(
            storageDirectory: directory.appendingPathComponent("storage"), applicationFacetId: profile.facetId,
            deviceFingerprint: profile.fingerprint, deviceProfile: profile.profile == "android" ? .android : .ios)
    }

    var deviceInformation: DeviceInformation { DeviceInformation(name: profile.name, fcmRegistrationToken: profile.pushToken) }

    /// The authorization a command was given: `--jwt` (or `MAUTH_DEVICE_JWT`), else `--cookie name=value` for the
    /// device's server; nil when neither.
    func authorization(jwt: String?, cookie: String?) throws -> (any AuthorizationProvider)? {
        if let jwt = jwt ?? ProcessInfo.processInfo.environment["MAUTH_DEVICE_JWT"] { return JwtAuthorizationProvider(jwt: jwt) }
        guard let cookie else { return nil }
        let parts = cookie.split(separator: "=", maxSplits: 1).map(String.init)
        guard parts.count == 2, let host = URL(string: profile.server)?.host,
            let value = HTTPCookie(properties: [.name: parts[0], .value: parts[1], .domain: host, .path: "/"])
        else {
            throw DeviceCommandError("--cookie must be name=value")
        }
        return CookieAuthorizationProvider([value])
    }

    /// The device's passkeys (`passkeys/keys.json`, in a folder of mode 0700: private keys): what a phone's keychain
    /// keeps.
    var passkeysFile: URL { directory.appendingPathComponent("passkeys/keys.json") }

    /// Keeps `passkeys`, once the device has made one.
    static func save(_ passkeys: SimulatedPasskeys, to file: URL) throws {
        let stored = passkeys.stored
        guard !stored.isEmpty || FileManager.default.fileExists(atPath: file.path) else { return }
        let folder = file.deletingLastPathComponent()
        do { try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700]) } catch {
            throw DeviceCommandError("cannot make \(folder.path): \(SystemErrorText.reason(error))")
        }
        try HeadlessAppAttestation.write(try JSONEncoder().encode(stored), to: file)
    }

    /// Runs `body` with a client of this device and shuts the client down afterwards.
    func withClient<T>(_ body: (any MobileAuthenticationClient) async throws -> T) async throws -> T {
        guard let baseURL = URL(string: profile.server) else { throw DeviceCommandError("the device's server URL \(profile.server) is not a URL") }
        // A headless device has no one to wait for: answers come from the command line, so a short interaction timeout.
        var configuration = Configuration(
            baseUrl: baseURL, networkTimeoutInSeconds: 30, userInteractionTimeoutInSeconds: 30, facetId: profile.facetId)
        if let pem = profile.trustedCertificatesPEM { configuration = configuration.withTransportSecurity(.debug(trustedCertificatesPEM: [pem])) }
        let platform = self.platform
        let attached = try profile.appAttestation.map { try HeadlessAppAttestation.attach($0, directory: directory, to: platform) }
        if let attached { configuration = configuration.withAppAttestation(attached.configuration) }
        if let data = FileManager.default.contents(atPath: passkeysFile.path) {
            do {
                platform.simulatedPasskeys.restore(try JSONDecoder().decode([SoftwarePasskeyAuthenticator.StoredCredential].self, from: data))
            } catch {
                throw DeviceCommandError("\(passkeysFile.path) is damaged (not the device's passkeys): \(error)")
            }
        }
        let client = try await MobileAuthenticationClientInitializer().configuration(configuration).platform(platform).executeAsync()
        // The App Attest keys and the passkeys are kept whatever the command's outcome: a key made is the device's.
        let passkeys = platform.simulatedPasskeys
        let passkeysFile = self.passkeysFile
        defer {
            try? attached?.save()
            try? Self.save(passkeys, to: passkeysFile)
        }
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
    /// A readable reason: the SDK's description of its error (never Swift's debug description of the case), without
    /// the source paths some libraries put in their errors, and with what to do about an untrusted certificate.
    static func describe(_ error: any Error) -> String {
        if let error = error as? DeviceCommandError { return error.description }
        if let error = error as? ValidationError { return error.message }
        let text = withoutSourcePaths((error as? LocalizedError)?.errorDescription ?? String(describing: error))
        if (error as? any MobileAuthenticationClientError)?.fidoErrorCode == .insecureTransport {
            return text + " If the server uses a development certificate, trust it: mauth device trust --ca-file FILE"
        }
        return text
    }

    /// BoringSSL's errors name the file and line they were raised at ("at /…/ssl/handshake.cc:320").
    static func withoutSourcePaths(_ text: String) -> String {
        text.replacing(#/ at /[^\s\]\)]+:\d+/#, with: "")
    }
}

// MARK: - Secrets and authenticators

/// A PIN or password: the flag, then the environment variable, then a prompt on a terminal. Never a default.
func deviceSecret(_ flag: String?, environment variable: String, prompt: String) throws -> String {
    if let flag { return flag }
    if let value = ProcessInfo.processInfo.environment[variable] { return value }
    guard standardInputIsTerminal else {
        throw DeviceCommandError("no \(prompt.lowercased()): pass it as an option, set \(variable), or run in a terminal to be asked")
    }
    guard let typed = getpass("\(prompt): ") else { throw DeviceCommandError("no \(prompt.lowercased()) was typed") }
    return String(cString: typed)
}

/// The username of the device's only account, or an error that lists them.
func onlyAccount(_ client: any MobileAuthenticationClient) throws -> String {
    let usernames = Array(Set(client.localData.accounts.map(\.username))).sorted()
    guard usernames.count == 1 else {
        throw DeviceCommandError(
            usernames.isEmpty
                ? "the device has no account: register first"
                : "the device has several accounts (\(usernames.joined(separator: ", "))): pass --username")
    }
    return usernames[0]
}
