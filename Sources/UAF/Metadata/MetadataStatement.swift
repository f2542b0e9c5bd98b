import FIDOAttestation
import Foundation

/// One entry of `userVerificationDetails` (numeric metadata form).
public struct VerificationMethodDescriptor: Codable, Hashable, Sendable {
    public var userVerification: UInt32
    public init(userVerification: UInt32) { self.userVerification = userVerification }
}

/// A FIDO UAF metadata statement in the numeric ("v2") form used by nevisFIDO and the seed documentation
/// (uaf-spec §6). Two optional list fields extend it: `authenticationAlgorithms` and `publicKeyAlgAndEncodings`
/// name further algorithms/encodings the authenticator may use besides the single `authenticationAlgorithm` /
/// `publicKeyAlgAndEncoding` (the Android authenticators support both ECDSA and RSA, per the seed's table).
public struct MetadataStatement: Codable, Hashable, Sendable {
    public var aaid: String
    public var description: String
    public var assertionScheme: String
    public var attestationRootCertificates: [String]
    public var attestationTypes: [UInt16]
    public var upv: [Version]
    public var userVerificationDetails: [[VerificationMethodDescriptor]]
    public var attachmentHint: UInt32
    public var authenticationAlgorithm: UInt16
    public var authenticationAlgorithms: [UInt16]?
    public var authenticatorVersion: UInt16
    public var isSecondFactorOnly: Bool
    public var keyProtection: UInt16
    public var matcherProtection: UInt16
    public var publicKeyAlgAndEncoding: UInt16
    public var publicKeyAlgAndEncodings: [UInt16]?
    public var tcDisplay: UInt16
    public var tcDisplayContentType: String?
    /// Vendor root public keys (base64 DER SubjectPublicKeyInfo) for full basic attestation through Android key
    /// attestation: the Nevis extension `nevis.auth.fido.uaf.google-attestation-root-keys`, tried before
    /// `attestationRootCertificates` (server-api E.1). Google publishes its hardware attestation roots' keys.
    public var vendorRootKeys: [String]?

    enum CodingKeys: String, CodingKey {
        case aaid, description, assertionScheme, attestationRootCertificates, attestationTypes, upv, userVerificationDetails
        case attachmentHint, authenticationAlgorithm, authenticationAlgorithms, authenticatorVersion, isSecondFactorOnly
        case keyProtection, matcherProtection, publicKeyAlgAndEncoding, publicKeyAlgAndEncodings, tcDisplay, tcDisplayContentType
        case vendorRootKeys = "nevis.auth.fido.uaf.google-attestation-root-keys"
    }

    public init(
        aaid: String, description: String, assertionScheme: String = AssertionScheme.uafV1TLV,
        attestationRootCertificates: [String] = [], attestationTypes: [UInt16], upv: [Version] = [.uaf11],
        userVerificationDetails: [[VerificationMethodDescriptor]], attachmentHint: UInt32 = 1,
        authenticationAlgorithm: UInt16, authenticationAlgorithms: [UInt16]? = nil, authenticatorVersion: UInt16 = 1,
        isSecondFactorOnly: Bool = false, keyProtection: UInt16, matcherProtection: UInt16,
        publicKeyAlgAndEncoding: UInt16, publicKeyAlgAndEncodings: [UInt16]? = nil, tcDisplay: UInt16 = 1,
        tcDisplayContentType: String? = "text/plain", vendorRootKeys: [String]? = nil
    ) {
        self.aaid = aaid
        self.description = description
        self.assertionScheme = assertionScheme
        self.attestationRootCertificates = attestationRootCertificates
        self.attestationTypes = attestationTypes
        self.upv = upv
        self.userVerificationDetails = userVerificationDetails
        self.attachmentHint = attachmentHint
        self.authenticationAlgorithm = authenticationAlgorithm
        self.authenticationAlgorithms = authenticationAlgorithms
        self.authenticatorVersion = authenticatorVersion
        self.isSecondFactorOnly = isSecondFactorOnly
        self.keyProtection = keyProtection
        self.matcherProtection = matcherProtection
        self.publicKeyAlgAndEncoding = publicKeyAlgAndEncoding
        self.publicKeyAlgAndEncodings = publicKeyAlgAndEncodings
        self.tcDisplay = tcDisplay
        self.tcDisplayContentType = tcDisplayContentType
        self.vendorRootKeys = vendorRootKeys
    }

    /// Every signature algorithm this authenticator may use.
    public var supportedAlgorithms: Set<SignatureAlgorithm> {
        Set(([authenticationAlgorithm] + (authenticationAlgorithms ?? [])).map(SignatureAlgorithm.init(rawValue:)))
    }

    /// Every public key encoding this authenticator may use.
    public var supportedKeyEncodings: Set<PublicKeyEncoding> {
        Set(([publicKeyAlgAndEncoding] + (publicKeyAlgAndEncodings ?? [])).map(PublicKeyEncoding.init(rawValue:)))
    }

    /// The union of all user verification methods the statement lists.
    public var userVerificationMethods: UserVerificationMethods {
        UserVerificationMethods(rawValue: userVerificationDetails.joined().reduce(0) { $0 | $1.userVerification })
    }

    /// The capabilities policy matching uses.
    public var capabilities: AuthenticatorCapabilities {
        AuthenticatorCapabilities(
            aaid: aaid, authenticatorVersion: authenticatorVersion, userVerification: userVerificationMethods,
            keyProtection: KeyProtection(rawValue: keyProtection), matcherProtection: MatcherProtection(rawValue: matcherProtection),
            attachmentHint: AttachmentHint(rawValue: attachmentHint), tcDisplay: TransactionConfirmationDisplay(rawValue: tcDisplay),
            authenticationAlgorithms: supportedAlgorithms, assertionScheme: assertionScheme,
            attestationTypes: Set(attestationTypes))
    }
}

/// A set of metadata statements indexed by AAID (compared case-insensitively), and the Metadata Service's FIDO2
/// entries indexed by AAGUID: one home for what the server knows about authenticators of either protocol.
public struct MetadataStore: Sendable {
    public enum LoadError: Error, Equatable, CustomStringConvertible {
        case invalidJSON(String)
        case duplicateAAID(String)
        case invalidAAID(String)
        public var description: String {
            switch self {
            case .invalidJSON(let detail): return "metadata is not valid JSON metadata statements: \(detail)"
            case .duplicateAAID(let aaid): return "metadata lists AAID \(aaid) twice"
            case .invalidAAID(let aaid): return "metadata has an invalid AAID \"\(aaid)\""
            }
        }
    }

    /// A statement with the values verification derives from it, computed once at load time.
    struct Entry: Sendable {
        let statement: MetadataStatement
        let capabilities: AuthenticatorCapabilities
        let algorithms: Set<SignatureAlgorithm>
        let keyEncodings: Set<PublicKeyEncoding>
    }

    private var statements: [String: Entry] = [:]
    /// The Metadata Service's status reports by normalized AAID (`StatusReport`); empty without a BLOB.
    private var reports: [String: [StatusReport]] = [:]

    /// The FIDO2 entries by AAGUID (16 bytes).
    private var fido2: [[UInt8]: FIDO2Metadata] = [:]
    /// The U2F entries (no AAGUID) by attestation certificate key identifier (lower-case hex).
    private var u2f: [String: FIDO2Metadata] = [:]

    /// A store of `statements`, the status reports the Metadata Service gave for AAIDs (which may name
    /// authenticators no statement describes: they are kept, and still refuse), and its FIDO2 entries (the first
    /// entry for an AAGUID, or for a U2F key identifier, is kept).
    public init(_ statements: [MetadataStatement], statusReports: [String: [StatusReport]] = [:], fido2: [FIDO2Metadata] = []) throws(LoadError) {
        for entry in fido2 {
            if entry.attestationCertificateKeyIdentifiers.isEmpty {
                if self.fido2[entry.aaguid] == nil { self.fido2[entry.aaguid] = entry }
            } else {
                for key in entry.attestationCertificateKeyIdentifiers where u2f[key] == nil { u2f[key] = entry }
            }
        }
        for (aaid, list) in statusReports where !list.isEmpty {
            guard AAID.isValid(aaid) else { throw LoadError.invalidAAID(aaid) }
            reports[AAID.normalized(aaid), default: []].append(contentsOf: list)
        }
        for statement in statements {
            guard AAID.isValid(statement.aaid) else { throw LoadError.invalidAAID(statement.aaid) }
            let entry = Entry(
                statement: statement, capabilities: statement.capabilities,
                algorithms: statement.supportedAlgorithms, keyEncodings: statement.supportedKeyEncodings)
            guard self.statements.updateValue(entry, forKey: AAID.normalized(statement.aaid)) == nil else {
                throw LoadError.duplicateAAID(statement.aaid)
            }
        }
    }

    func entry(for aaid: String) -> Entry? { statements[AAID.normalized(aaid)] }

    /// Loads one JSON document holding a single statement or an array of them, in either form (numeric or MDS3);
    /// statements of other protocol families are an error here (see ``parse(json:)`` to skip them).
    public static func statements(fromJSON data: Data) throws(LoadError) -> [MetadataStatement] {
        let parsed = try parse(json: data)
        if let skipped = parsed.skipped.first { throw LoadError.invalidJSON("not a UAF statement: \(skipped)") }
        return parsed.statements
    }

    /// What one metadata document held: the UAF statements, and a description of each statement skipped because
    /// it belongs to another protocol family (`u2f`, `fido2`), for the operator's log.
    public struct ParsedDocument: Sendable {
        public var statements: [MetadataStatement]
        public var skipped: [String]
    }

    /// One statement as a document holds it, in the form its fields show (numeric or MDS3), decoded once: what a
    /// metadata document's array and a Metadata Service BLOB entry's `metadataStatement` hold.
    public struct DecodedStatement: Decodable, Sendable {
        private enum Form: Sendable {
            case numeric(MetadataStatement)
            case mds3(MDS3Statement)
            case otherFamily(String)
        }
        private let form: Form

        /// Reads the form the statement's fields show: MDS3 when it says `protocolFamily` or writes its algorithms
        /// as strings, else numeric.
        public init(from decoder: any Decoder) throws {
            let probe = try Probe(from: decoder)
            guard probe.mds3 else {
                form = .numeric(try MetadataStatement(from: decoder))
                return
            }
            let family = probe.protocolFamily ?? "uaf"
            guard family == "uaf" else {
                form = .otherFamily("\(family) statement \(probe.aaid ?? probe.description ?? "without a name")")
                return
            }
            do { form = .mds3(try MDS3Statement(from: decoder)) } catch {
                throw LoadError.invalidJSON("MDS3 statement \(probe.aaid ?? "?"): \(error)")
            }
        }

        /// The numeric statement, nil for another protocol family, or why it cannot describe a UAF authenticator.
        public func statement() throws(LoadError) -> MetadataStatement? {
            switch form {
            case .numeric(let statement): return statement
            case .mds3(let statement): return try statement.numeric()
            case .otherFamily: return nil
            }
        }

        /// The name of a statement of another protocol family (`u2f`, `fido2`), for the operator's log; nil for UAF.
        public var otherFamily: String? {
            if case .otherFamily(let name) = form { return name }
            return nil
        }

        private struct Probe: Decodable {
            var protocolFamily: String?
            var aaid: String?
            var description: String?
            var mds3: Bool
            enum CodingKeys: String, CodingKey { case protocolFamily, aaid, description, authenticationAlgorithms }
            init(from decoder: any Decoder) throws {
                let c = try decoder.container(keyedBy: CodingKeys.self)
                protocolFamily = try c.decodeIfPresent(String.self, forKey: .protocolFamily)
                aaid = try? c.decodeIfPresent(String.self, forKey: .aaid)
                description = try? c.decodeIfPresent(String.self, forKey: .description)
                mds3 = protocolFamily != nil || (try? c.decodeIfPresent([String].self, forKey: .authenticationAlgorithms)) != nil
            }
        }
    }

    /// Parses one JSON document (a statement or an array of them). A statement is read in the MDS3 form when it
    /// says `protocolFamily` or writes its algorithms as strings, else in the numeric form.
    public static func parse(json data: Data) throws(LoadError) -> ParsedDocument {
        // The document is one statement or an array of them; its first significant byte says which, so an error
        // inside an element is reported as itself.
        let isArray = data.first { !" \t\r\n".utf8.contains($0) } == UInt8(ascii: "[")
        let elements: [DecodedStatement]
        do {
            elements =
                isArray
                ? try JSONDecoder().decode([DecodedStatement].self, from: data) : [try JSONDecoder().decode(DecodedStatement.self, from: data)]
        } catch let error as LoadError {
            throw error
        } catch {
            throw LoadError.invalidJSON("\(error)")
        }
        var document = ParsedDocument(statements: [], skipped: [])
        for element in elements {
            if let statement = try element.statement() { document.statements.append(statement) }
            if let name = element.otherFamily { document.skipped.append(name) }
        }
        return document
    }

    public func statement(for aaid: String) -> MetadataStatement? { statements[AAID.normalized(aaid)]?.statement }
    /// The status reports the Metadata Service gave for `aaid`, in its order.
    public func statusReports(for aaid: String) -> [StatusReport] { reports.isEmpty ? [] : reports[AAID.normalized(aaid)] ?? [] }
    public var all: [MetadataStatement] { statements.values.map(\.statement).sorted { $0.aaid < $1.aaid } }
    /// The Metadata Service's entry for a FIDO2 authenticator model, by its AAGUID (16 bytes).
    public func fido2Metadata(aaguid: [UInt8]) -> FIDO2Metadata? { fido2[aaguid] }
    /// The Metadata Service's entry for a U2F model, by an attestation certificate key identifier (hex, either case).
    public func fido2Metadata(attestationCertificateKeyIdentifier identifier: String) -> FIDO2Metadata? { u2f[identifier.lowercased()] }
}
