import ArgumentParser
import Crypto
import FIDOServer
import FIDOSimulation
import Foundation
import JOSE

/// `mauth admin token`: a relying party's JWT for a username, for development and tests: what a bank's backend hands
/// its app after its own login, and what the server asks for before it registers a key (`mauth device register
/// --jwt`). Signed ES256 with a P-256 key whose public half the server trusts (`authorization.jwt.publicKeyPaths`);
/// a production relying party signs its own tokens with a key it never shares.
struct AdminTokenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token",
        abstract: "Mint a relying party's JWT for a username (development): ES256 with a P-256 key the server trusts.",
        discussion: """
            With --create-key a missing KEY is made, with its public half beside it twice: as a JWKS (rp.pem gives \
            rp.jwks.json, for authorization.jwt.jwksPath or MAUTH_JWT_JWKS) and as a PEM (rp.pub.pem, for \
            authorization.jwt.publicKeyPaths). The issuer and audience come from --config (the server's authorization.jwt) \
            unless given.
            """)

    @Option(help: "The relying party's P-256 private key (PEM).") var key: String
    @Flag(help: "Make the key, and its public half beside it (a JWKS and a PEM), when the file does not exist.") var createKey = false
    @Option(help: "The username the token speaks for (its sub claim).") var subject: String
    @Option(help: "The server's configuration file: the issuer and audience it expects (authorization.jwt).") var config: String?
    @Option(help: "The iss claim (default: the configuration's authorization.jwt.issuer, else https://rp.example).") var issuer: String?
    @Option(help: "The aud claim (default: the configuration's authorization.jwt.audience, else mauth-server).") var audience: String?
    @Option(help: "A scope claim (the configured operator or admin scope, for the admin endpoints).") var scope: String?
    @Option(help: "Seconds the token is valid (1...86400).") var lifetime = 300

    func validate() throws {
        guard (1...86_400).contains(lifetime) else { throw ValidationError("--lifetime must be 1...86400 seconds") }
        guard !subject.isEmpty, subject.utf8.count <= 256 else { throw ValidationError("--subject must be 1...256 bytes") }
    }

    func run() async throws {
        let configured = try config.flatMap { try ServerConfiguration.load(path: $0).authorization.jwt }
        let privateKey = try Self.key(at: key, create: createKey)
        let relyingParty = LocalRelyingParty(
            issuer: issuer ?? configured?.issuer ?? "https://rp.example",
            audience: audience ?? configured?.audience ?? "mauth-server",
            kid: JOSE.JWK(publicKey: privateKey.publicKey).thumbprint, key: privateKey)
        var claims = relyingParty.claims(subject: subject, lifetime: TimeInterval(lifetime))
        claims.scope = scope
        say(try await relyingParty.sign(claims))
    }

    /// The PEM key at `path`; made when missing and `create` is set, with its public half beside it
    /// (``publicPaths(for:)``).
    static func key(at path: String, create: Bool) throws -> P256.Signing.PrivateKey {
        guard FileManager.default.fileExists(atPath: path) else {
            guard create else { throw ValidationError("no key at \(path): pass --create-key to make one") }
            let key = P256.Signing.PrivateKey()
            let (jwks, pem) = publicPaths(for: path)
            let folder = URL(fileURLWithPath: path).deletingLastPathComponent()
            try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            // The private key readable by its owner only: whoever reads it can register keys for anyone.
            guard FileManager.default.createFile(atPath: path, contents: Data(key.pemRepresentation.utf8), attributes: [.posixPermissions: 0o600])
            else {
                throw ValidationError("cannot write \(path)")
            }
            let relyingParty = LocalRelyingParty(kid: JOSE.JWK(publicKey: key.publicKey).thumbprint, key: key)
            do {
                try relyingParty.writeJWKS(to: jwks)
                try Data(key.publicKey.pemRepresentation.utf8).write(to: URL(fileURLWithPath: pem))
            } catch { throw ValidationError("cannot write the public key beside \(path): \(error.localizedDescription)") }
            note("made \(path), and its public half \(jwks) (authorization.jwt.jwksPath, MAUTH_JWT_JWKS) and \(pem) (publicKeyPaths)")
            return key
        }
        return try readP256PrivateKey(path, option: "--key")
    }

    /// Where a made key's public half goes: `rp.pem` → `rp.jwks.json` and `rp.pub.pem` (any other name gets both
    /// endings appended).
    static func publicPaths(for path: String) -> (jwks: String, pem: String) {
        let stem = path.hasSuffix(".pem") ? String(path.dropLast(4)) : path
        return (stem + ".jwks.json", stem + ".pub.pem")
    }
}
