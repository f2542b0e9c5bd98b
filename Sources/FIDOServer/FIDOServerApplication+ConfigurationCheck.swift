import FIDOServerCore
import Foundation
import Logging

extension FIDOServerApplication {
    /// What `mauth server --check-config` found: every problem a start would stop at, and what it could not check.
    public struct ConfigurationCheck: Sendable {
        /// Each problem in an operator's words, naming its setting; a start stops at the first of them.
        public var problems: [String]
        /// What is left to the start: the network sources (a URL is not fetched) and the database (not opened).
        public var notChecked: [String]
    }

    /// Checks `configuration` as a start would, without starting: every rule (`ServerConfiguration.problems()`)
    /// and every file a setting names, read and parsed by the loader the start uses, each on its own, so one run lists
    /// every problem instead of the first. It writes nothing (no development certificate, no database, no migration)
    /// and contacts nothing: URLs (the Metadata Service's BLOB, a JWKS) and the database are named as not checked.
    public static func checkConfiguration(_ configuration: ServerConfiguration) async -> ConfigurationCheck {
        var problems = configuration.problems()
        var notChecked: [String] = []
        func check(_ body: () throws -> Void) {
            do { try body() } catch { problems.append("\(error)") }
        }
        func checkAsync(_ body: () async throws -> Void) async {
            do { try await body() } catch { problems.append("\(error)") }
        }
        let quiet = Logger(label: "mauth.check-config", factory: { _ in SwiftLogNoOpLogHandler() })

        check { try configuration.checkTrustedFacets() }
        check { try StoreDatabase.checkExistingFile(configuration.database) }
        if case .postgres = configuration.database { notChecked.append("database: PostgreSQL is reached at start") }
        // Only configured files: without them the start makes a development certificate, which checking must not write.
        if configuration.tls.files != nil { check { _ = try makeTLS(configuration) } }
        check { _ = try clientCertificateAuthorities(configuration) }
        if let path = configuration.facetsPath {
            check { _ = try TrustedFacetsSource(path: path, allowWildcards: configuration.authorization.developmentMode) }
        }
        check { _ = try configuration.loadMetadata(skipped: { _ in }) }
        if let service = configuration.metadataService {
            check { _ = try ServerConfiguration.readCertificates(service.rootCertificatesPath, setting: "metadataService.rootCertificatesPath") }
            if let path = service.trustedCertificatesPath {
                check { _ = try ServerConfiguration.readCertificates(path, setting: "metadataService.trustedCertificatesPath") }
            }
            if let path = service.revocationListsPath {
                check { _ = try ServerConfiguration.readFile(path, setting: "metadataService.revocationListsPath") }
            }
            if service.blob.hasPrefix("https://") || service.blob.hasPrefix("http://") {
                notChecked.append("metadataService.blob: \(service.blob) is fetched at start")
            } else {
                check { _ = try ServerConfiguration.readFile(service.blob, setting: "metadataService.blob") }
            }
        }
        if var jwt = configuration.authorization.jwt {
            if let url = jwt.jwksURL { notChecked.append("authorization.jwt.jwksURL: \(url) is fetched at start") }
            if let path = jwt.jwksTrustedCertificatesPath {
                check { _ = try ServerConfiguration.readCertificates(path, setting: "authorization.jwt.jwksTrustedCertificatesPath") }
            }
            if jwt.jwksPath != nil || !jwt.publicKeyPaths.isEmpty {
                jwt.jwksURL = nil
                await checkAsync { _ = try await RelyingPartyTokenVerifier.load(jwt, logger: quiet) }
            }
        }
        await checkAsync { try await TokenIssuer.checkSigningKeyFile(configuration.tokens) }
        if let fido2 = configuration.fido2 { check { _ = try PasskeySettings(fido2) } }
        check { _ = try AppAttestationSettings(configuration) }
        // The settings stop at the first key they cannot read; each key file is named on its own (unless the
        // environment gives that key, which wins over the file).
        if let android = configuration.appAttestation?.android {
            let environment = ProcessInfo.processInfo.environment
            for (variable, path, setting) in [
                ("MAUTH_PLAY_INTEGRITY_DECRYPTION_KEY", android.decryptionKeyPath, "appAttestation.android.decryptionKeyPath"),
                ("MAUTH_PLAY_INTEGRITY_VERIFICATION_KEY", android.verificationKeyPath, "appAttestation.android.verificationKeyPath"),
            ] where environment[variable] == nil {
                if let path { check { _ = try ServerConfiguration.readFile(path, setting: setting) } }
            }
        }
        if let firebase = configuration.dispatch.firebase {
            check { _ = try FirebaseServiceAccount.load(path: firebase.serviceAccountPath) }
            if let path = firebase.trustedCertificatesPath {
                check { _ = try ServerConfiguration.readCertificates(path, setting: "dispatch.firebase.trustedCertificatesPath") }
            }
        }
        if let path = configuration.observability.auditLogPath {
            let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
            if !FileManager.default.isWritableFile(atPath: folder) {
                problems.append("observability.auditLogPath: the folder \(folder) does not exist or this account cannot write to it")
            }
        }
        // One problem found by two checks (a rule and the loader of the same file) is said once.
        var seen: Set<String> = []
        return ConfigurationCheck(problems: problems.filter { seen.insert($0).inserted }, notChecked: notChecked)
    }
}
