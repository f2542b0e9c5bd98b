import FIDOAttestation
import Foundation
import SwiftASN1
import X509

/// A certificate revocation list (RFC 5280 §5.1) an operator configured for attestation chains: which certificates
/// its issuer has revoked. swift-certificates reads no CRL, so this reads the DER itself, with swift-asn1, and checks
/// its signature with the issuer's key through swift-certificates; Python's cryptography writes the lists the tests
/// read.
///
/// Read: the issuer, `thisUpdate`, `nextUpdate`, the revoked serial numbers and the signature. Entry and list
/// extensions are not interpreted (a delta CRL's, a reason code's); a list is only ever more revocations.
public struct RevocationList: Sendable {
    /// Why a list was refused.
    public struct ReadError: Error, Sendable, Equatable, CustomStringConvertible {
        public let reason: String
        public var description: String { "certificate revocation list: \(reason)" }
    }

    public let issuer: DistinguishedName
    public let thisUpdate: Date
    public let nextUpdate: Date?
    /// The revoked certificates' serial numbers, as their DER INTEGER content bytes.
    public let revokedSerialNumbers: Set<[UInt8]>
    let signedBytes: ArraySlice<UInt8>
    let signatureAlgorithm: Certificate.SignatureAlgorithm?
    let signature: [UInt8]

    /// The largest list read, and the most entries: a list is configured by the operator, but a wrong file must not
    /// cost the start-up more than this.
    public static let maximumBytes = 8 * 1024 * 1024

    /// The list in `der` (one CertificateList).
    public init(derEncoded der: [UInt8]) throws(ReadError) {
        func fail(_ reason: String) -> ReadError { ReadError(reason: reason) }
        guard der.count <= Self.maximumBytes else { throw fail("larger than \(Self.maximumBytes) bytes") }
        let root: ASN1Node
        do { root = try DER.parse(der) } catch { throw fail("not DER (\(error))") }
        guard case .constructed(let parts) = root.content else { throw fail("not a SEQUENCE") }
        var outer = parts.makeIterator()
        guard let tbs = outer.next(), let algorithm = outer.next(), let signature = outer.next(), outer.next() == nil else {
            throw fail("not tbsCertList, signatureAlgorithm and signatureValue")
        }
        self.signedBytes = tbs.encodedBytes
        do {
            signatureAlgorithm = Self.signatureAlgorithm(try ASN1ObjectIdentifier(derEncoded: try Self.first(of: algorithm)))
            let bits = try ASN1BitString(derEncoded: signature)
            guard bits.paddingBits == 0 else { throw fail("a signature with unused bits") }
            self.signature = Array(bits.bytes)
        } catch let error as ReadError { throw error } catch { throw fail("signatureAlgorithm or signatureValue: \(error)") }

        guard case .constructed(let fields) = tbs.content else { throw fail("tbsCertList is not a SEQUENCE") }
        var iterator = fields.makeIterator()
        var field = iterator.next()
        // version (v2) is optional, an INTEGER; the signature's AlgorithmIdentifier follows.
        if let version = field, version.identifier == .integer { field = iterator.next() }
        guard field != nil else { throw fail("tbsCertList has no signature algorithm") }
        do {
            guard let issuerNode = iterator.next() else { throw fail("no issuer") }
            issuer = try DistinguishedName(derEncoded: issuerNode)
            guard let this = iterator.next() else { throw fail("no thisUpdate") }
            thisUpdate = try CertificateTime.date(this)
            var next = iterator.next()
            if let node = next, node.identifier == .utcTime || node.identifier == .generalizedTime {
                nextUpdate = try CertificateTime.date(node)
                next = iterator.next()
            } else {
                nextUpdate = nil
            }
            var serials = Set<[UInt8]>()
            if let node = next, node.identifier == .sequence {
                guard case .constructed(let entries) = node.content else { throw fail("revokedCertificates is not a SEQUENCE") }
                for entry in entries {
                    guard case .constructed(let members) = entry.content, let serial = members.first(where: { _ in true }),
                        serial.identifier == .integer, case .primitive(let bytes) = serial.content
                    else {
                        throw fail("a revoked certificate without a serial number")
                    }
                    // swift-asn1's parser does not look inside a primitive; its integer reading refuses an empty,
                    // padded or negative INTEGER, none of which is a serial number a certificate could carry.
                    guard (try? ArraySlice<UInt8>(derEncoded: serial)) != nil else {
                        throw fail("a revoked certificate's serial number is not a DER INTEGER")
                    }
                    serials.insert(Array(bytes))
                }
            }
            revokedSerialNumbers = serials
        } catch let error as ReadError { throw error } catch { throw fail("\(error)") }
    }

    /// Every list of a file: PEM (`X509 CRL` blocks) or one DER list.
    public static func lists(in data: [UInt8]) throws(ReadError) -> [RevocationList] {
        let text = String(decoding: data, as: UTF8.self)
        guard text.contains("-----BEGIN X509 CRL-----") else { return [try RevocationList(derEncoded: data)] }
        let documents: [PEMDocument]
        do { documents = try PEMDocument.parseMultiple(pemString: text) } catch { throw ReadError(reason: "not PEM (\(error))") }
        var lists: [RevocationList] = []
        for document in documents where document.discriminator == "X509 CRL" {
            lists.append(try RevocationList(derEncoded: document.derBytes))
        }
        return lists
    }

    /// Whether `issuer` (the certificate whose subject names this list's issuer) signed this list.
    public func isSigned(by issuer: Certificate) -> Bool {
        guard issuer.subject == self.issuer, let signatureAlgorithm else { return false }
        return issuer.publicKey.isValidSignature(signature, for: signedBytes, signatureAlgorithm: signatureAlgorithm)
    }

    /// Whether the list revokes `certificate`, which `issuer` issued: the list must be `issuer`'s, signed by it, and
    /// in force (`thisUpdate` not in the future). A list past its `nextUpdate` still counts: its revocations hold.
    public func revokes(_ certificate: Certificate, issuedBy issuer: Certificate, at now: Date) -> Bool {
        certificate.issuer == self.issuer && thisUpdate <= now && isSigned(by: issuer)
            && revokedSerialNumbers.contains(Self.integerContent(certificate.serialNumber.bytes))
    }

    /// A serial number's bytes as a DER INTEGER's content holds them (a leading zero when the top bit is set).
    static func integerContent(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
        var content = Array(bytes.drop { $0 == 0 })
        if content.isEmpty { content = [0] }
        if content[0] & 0x80 != 0 { content.insert(0, at: 0) }
        return content
    }

    private static func first(of node: ASN1Node) throws -> ASN1Node {
        guard case .constructed(let children) = node.content, let first = children.first(where: { _ in true }) else {
            throw ReadError(reason: "an AlgorithmIdentifier without an algorithm")
        }
        return first
    }

    /// The algorithms a list may be signed with; nil for another, whose list then verifies for no issuer.
    private static func signatureAlgorithm(_ oid: ASN1ObjectIdentifier) -> Certificate.SignatureAlgorithm? {
        switch oid {
        case [1, 2, 840, 10045, 4, 3, 2]: .ecdsaWithSHA256
        case [1, 2, 840, 10045, 4, 3, 3]: .ecdsaWithSHA384
        case [1, 2, 840, 10045, 4, 3, 4]: .ecdsaWithSHA512
        case .AlgorithmIdentifier.sha256WithRSAEncryption: .sha256WithRSAEncryption
        case .AlgorithmIdentifier.sha384WithRSAEncryption: .sha384WithRSAEncryption
        case .AlgorithmIdentifier.sha512WithRSAEncryption: .sha512WithRSAEncryption
        case [1, 3, 101, 112]: .ed25519
        default: nil
        }
    }
}
