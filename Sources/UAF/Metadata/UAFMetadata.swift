import FIDOAttestation
import Foundation

/// What UAF's verifiers look an authenticator up in: the metadata statements by AAID (compared case-insensitively), each
/// with the values verification derives from it computed once, and the Metadata Service's status reports by AAID. The
/// UAF side of what a relying party knows about authenticators; a server that also speaks WebAuthn keeps its FIDO2
/// entries beside it, outside this core (as WebAuthn's ceremonies take their metadata through `AttestationTrust`).
public struct UAFMetadata: Sendable {
    /// Why metadata did not load. Compare with the static values; the reasons behind them are internal, so the module
    /// can add one without breaking a caller's `switch`.
    public struct LoadError: Error, Hashable, Sendable, CustomStringConvertible {
        enum Reason: Hashable, Sendable {
            case invalidJSON(String)
            case duplicateAAID(String)
            case invalidAAID(String)
        }
        let reason: Reason
        init(_ reason: Reason) { self.reason = reason }

        /// The document is not JSON metadata statements: `detail` says where.
        public static func invalidJSON(_ detail: String) -> Self { Self(.invalidJSON(detail)) }
        /// Two statements name the same AAID.
        public static func duplicateAAID(_ aaid: String) -> Self { Self(.duplicateAAID(aaid)) }
        /// A statement or a status report names an AAID that is not of the form `VVVV#MMMM`.
        public static func invalidAAID(_ aaid: String) -> Self { Self(.invalidAAID(aaid)) }

        public var description: String {
            switch reason {
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

    /// The lookup of `statements` and of the status reports the Metadata Service gave for AAIDs (which may name
    /// authenticators no statement describes: they are kept, and still refuse).
    public init(_ statements: [MetadataStatement], statusReports: [String: [StatusReport]] = [:]) throws(LoadError) {
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
}
