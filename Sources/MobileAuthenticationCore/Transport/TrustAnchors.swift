import Foundation
import NIOSSL

extension TransportSecurity {
    /// The certificates a transport trusts beside the system's roots, as DER, whatever the build: what
    /// ``TransportSecurity/debug(trustedCertificatesPEM:)`` names, each PEM block read and checked. The Linux
    /// transport (``HTTPTransport``) takes them as they are: there, the flavor is not a concept (command-line tools
    /// and servers), and a caller that names roots wants them.
    package func configuredAnchors() throws(TransportFailure) -> [Data] {
        guard case .debug(let pems) = self else { return [] }
        var anchors: [Data] = []
        for (index, pem) in pems.enumerated() {
            let certificates: [NIOSSLCertificate]
            do { certificates = try NIOSSLCertificate.fromPEMBytes(Array(pem.utf8)) } catch {
                throw .insecure("certificate \(index + 1) of TransportSecurity.debug is not a PEM certificate")
            }
            guard !certificates.isEmpty else { throw .insecure("certificate \(index + 1) of TransportSecurity.debug is empty") }
            for certificate in certificates {
                do { anchors.append(Data(try certificate.toDERBytes())) } catch {
                    throw .insecure("certificate \(index + 1) of TransportSecurity.debug cannot be encoded")
                }
            }
        }
        return anchors
    }

    /// The certificates the app's transport trusts beside the system's roots in a build of `flavor`: the configured
    /// ones in the debug flavor; none in the release flavor, which refuses a configuration that names some rather
    /// than ignore them. A release build that trusted a development root would let whoever holds its key (or, for the
    /// development certificate, whoever ran the server) read and change the app's traffic; ignoring the roots quietly
    /// would turn a build mistake into TLS failures on every request, far from their cause.
    package func additionalAnchors(in flavor: SDKFlavor) throws(TransportFailure) -> [Data] {
        let anchors = try configuredAnchors()
        guard flavor == .release, !anchors.isEmpty else { return anchors }
        throw .insecure(
            "the release flavor trusts only the system's roots: TransportSecurity.debug(trustedCertificatesPEM:) is for debug builds (Xcode's Run)")
    }
}
