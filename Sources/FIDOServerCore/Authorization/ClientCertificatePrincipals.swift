import Crypto
import Foundation
import X509

/// The relying party's client certificates (`authorization.clientCertificates`): which principal a certificate the
/// TLS handshake verified speaks as. The handshake has already checked the chain to the configured authorities, the
/// validity period and the client-authentication purpose; this only names the certificate.
package struct ClientCertificatePrincipals: Sendable {
    let mappings: [ServerConfiguration.Authorization.ClientCertificates.Mapping]

    package init(_ configuration: ServerConfiguration.Authorization.ClientCertificates) {
        mappings = configuration.principals
    }

    /// The principal of the verified certificate `der`. A certificate no mapping names is refused: the authority may
    /// issue certificates for other purposes, and none of them may speak for anyone here.
    package func principal(certificateDER der: [UInt8]) throws(AuthorizationFailure) -> Principal {
        let fingerprint = SHA256.hash(data: der).map { String(format: "%02x", $0) }.joined()
        let subject: String
        do { subject = try Certificate(derEncoded: der).subject.description } catch {
            throw .unauthenticated("the client certificate cannot be read: \(error)")
        }
        // A fingerprint names one certificate, a subject any the authorities issue to it: the narrower wins.
        guard
            let mapping = mappings.first(where: { $0.normalizedSHA256 == fingerprint })
                ?? mappings.first(where: { $0.subject == subject })
        else {
            throw .unauthenticated("the client certificate \(subject) (sha256 \(fingerprint)) maps to no principal")
        }
        return Principal(
            source: .clientCertificate(name: mapping.name), subject: mapping.username, isAdmin: mapping.admin, isOperator: mapping.operator)
    }
}
