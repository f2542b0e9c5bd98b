import FIDOAttestation
import Foundation
import JWTKit
import Primitives
import UAF
import WebAuthn
import WireJSON
import X509

/// A FIDO Metadata Service BLOB (MDS3 §3.1.6, `MetadataBLOBPayload`) whose signature has been verified: a JWT
/// signed by the key of the first `x5c` certificate, whose chain leads to a configured root at the time given.
/// What it keeps is what a relying party uses: the serial number, `nextUpdate`, the UAF statements and the status
/// reports by AAID, and the FIDO2 entries by AAGUID and the U2F entries by attestation certificate key identifier
/// (their roots, attestation types and status reports).
///
/// Revocation lists: the ones the operator configured (`metadataService.revocationListsPath`) are checked against
/// every certificate of the signing chain; the distribution points the chain names are not fetched (that is left to
/// the operator's network policy; the chain is still validated in full, validity periods included).
package struct MetadataBLOB: Sendable {
    /// The BLOB's serial number (`no`): a reload accepts only a higher one, so an older BLOB served again cannot
    /// take back a revocation.
    package var number: Int
    /// The start (UTC) of the day `nextUpdate` names: by then a newer BLOB should exist.
    package var nextUpdate: Date
    package var statements: [MetadataStatement]
    package var statusReports: [String: [StatusReport]]
    /// The FIDO2 entries, one per AAGUID.
    package var fido2: [FIDO2Metadata]
    /// Entries left out, with the reason, for the operator's log.
    package var skipped: [String]

    /// The largest BLOB read: the public service's is a few megabytes.
    package static let maximumBytes = 32 << 20

    package enum Failure: Error, Equatable, CustomStringConvertible {
        /// Not a JWS, or its payload is not a BLOB payload.
        case malformed(String)
        /// The signature or its certificate chain does not verify against the configured roots.
        case untrusted(String)
        package var description: String {
            switch self {
            case .malformed(let reason): return "the metadata BLOB is malformed: \(reason)"
            case .untrusted(let reason): return "the metadata BLOB's signature does not verify: \(reason)"
            }
        }
    }

    /// The certificate of the verified JWS's `x5c` chain (leaf first, then the root of `roots` that issued the last)
    /// that a list of its issuer revokes, or nil. Read after the signature and the chain verified, so the header is
    /// the signer's, not a stranger's.
    static func revokedCertificate(of jws: [UInt8], roots: [Certificate], lists: [RevocationList], now: Date) -> Certificate? {
        struct Header: Decodable { var x5c: [String]? }
        guard let part = jws.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false).first,
            let bytes = Base64URL.decodeBytes(String(decoding: part, as: UTF8.self)),
            let encoded = (try? WireJSONDecoder().decode(Header.self, from: bytes))?.x5c
        else { return nil }
        var chain = encoded.compactMap { Data(base64Encoded: $0).flatMap { try? Certificate(derEncoded: Array($0)) } }
        if let last = chain.last, let root = roots.first(where: { $0.subject == last.issuer }), root != last { chain.append(root) }
        for (certificate, issuer) in zip(chain, chain.dropFirst()) where lists.contains(where: { $0.revokes(certificate, issuedBy: issuer, at: now) })
        {
            return certificate
        }
        return nil
    }

    /// Whether the `nextUpdate` day is over at `now`: the BLOB is late.
    package func isStale(at now: Date) -> Bool { now >= nextUpdate.addingTimeInterval(86400) }

    /// Verifies `token` (the JWT's compact form) against `roots` at `now` and reads its payload; a certificate of the
    /// signing chain that one of `revocationLists` revokes (its issuer's list, signed by it) makes it untrusted.
    package static func verify(
        _ token: Data, roots: [Certificate], revocationLists: [RevocationList] = [], now: Date
    ) async throws(Failure) -> MetadataBLOB {
        guard token.count <= maximumBytes else { throw .malformed("larger than \(maximumBytes) bytes") }
        // Surrounding white space (a file's trailing newline) is not part of the JWS.
        let trimmed = Array(token.drop { $0 <= 0x20 }.reversed().drop { $0 <= 0x20 }.reversed())
        guard trimmed.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false).count == 3 else {
            throw .malformed("not a compact JWS (three base64url parts)")
        }
        let payload: Payload
        do {
            let verifier = try X5CVerifier(rootCertificates: roots)
            payload = try await verifier.verifyJWS(trimmed, as: Payload.self, jsonDecoder: JSONDecoder(), validationTime: .fixed(now))
        } catch let error as DecodingError {
            throw .malformed("\(error)")
        } catch let error as JWTError {
            throw explain(error, now: now)
        } catch {
            throw .untrusted("\(error)")
        }
        if !revocationLists.isEmpty, let revoked = revokedCertificate(of: trimmed, roots: roots, lists: revocationLists, now: now) {
            throw .untrusted(
                "its issuer's revocation list revokes the signing chain's certificate \(UntrustedText.quoted(revoked.subject.description, limit: 200))"
            )
        }
        guard let nextUpdate = Self.day(payload.nextUpdate) else { throw .malformed("nextUpdate \"\(payload.nextUpdate)\" is not a YYYY-MM-DD date") }
        var blob = MetadataBLOB(number: payload.no, nextUpdate: nextUpdate, statements: [], statusReports: [:], fido2: [], skipped: [])
        for entry in payload.entries {
            switch entry.content {
            case .otherFamily: continue
            case .fido2(let entry, let notes):
                let keys = entry.attestationCertificateKeyIdentifiers
                let name = keys.isEmpty ? AAGUID.text(entry.aaguid) : "U2F key \(keys[0])"
                blob.skipped += notes.map { "\(name): \($0)" }
                guard
                    !blob.fido2.contains(where: {
                        keys.isEmpty
                            ? $0.aaguid == entry.aaguid && $0.attestationCertificateKeyIdentifiers.isEmpty
                            : !Set($0.attestationCertificateKeyIdentifiers).isDisjoint(with: keys)
                    })
                else {
                    blob.skipped.append("\(name): listed twice; the first entry is used")
                    continue
                }
                blob.fido2.append(entry)
            case .unreadable(let name, let reason): blob.skipped.append("\(name): \(reason)")
            case .uaf(let aaid, let statement, let reports, let notes):
                if !reports.isEmpty { blob.statusReports[aaid, default: []] += reports }
                blob.skipped += notes.map { "\(aaid): \($0)" }
                do {
                    if let statement = try statement?.statement() {
                        guard AAID.equal(statement.aaid, aaid) else {
                            blob.skipped.append("\(aaid): its statement describes \(statement.aaid)")
                            continue
                        }
                        blob.statements.append(statement)
                    }
                } catch {
                    blob.skipped.append("\(aaid): \(error)")
                }
            }
        }
        return blob
    }

    /// The operator's reading of what the JWT library refused.
    static func explain(_ error: JWTError, now: Date) -> Failure {
        let detail = error.reason.flatMap { $0.isEmpty || $0 == "[]" ? nil : " (\($0))" } ?? ""
        switch error.errorType {
        case .invalidX5CChain: return .untrusted("its x5c chain does not lead to a configured root at \(now)\(detail)")
        case .missingX5CHeader: return .untrusted("its header carries no x5c certificate chain")
        case .unsupportedAlgorithm: return .untrusted("its header names no signature algorithm this server verifies\(detail)")
        case .signatureVerificationFailed: return .untrusted("the signature is not the signing certificate's over this header and payload")
        case .malformedToken: return .malformed("not a JWS\(detail)")
        default: return .untrusted("\(error.errorType)\(detail)")
        }
    }

    /// A `YYYY-MM-DD` date (ISO 8601 full-date, as MDS3 writes `nextUpdate` and `effectiveDate`): the start of that day, UTC.
    static func day(_ text: String) -> Date? {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
            let year = Int(parts[0]), let month = Int(parts[1]), let day = Int(parts[2]),
            (1...12).contains(month), (1...31).contains(day)
        else { return nil }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let components = DateComponents(year: year, month: month, day: day)
        // Refuse a day the month does not have (2026-02-30) rather than let the calendar roll it over.
        guard components.isValidDate(in: calendar) else { return nil }
        return calendar.date(from: components)
    }

    /// `MetadataBLOBPayload`: what a UAF relying party reads of it.
    struct Payload: JWTPayload {
        var no: Int
        var nextUpdate: String
        var entries: [Entry]
        /// Freshness is the loader's decision (``ServerConfiguration/MetadataService/requireCurrent``), not the JWT's.
        func verify(using algorithm: some JWTAlgorithm) async throws {}
        /// `JWTPayload` is `Codable`; a BLOB is only ever read here, never signed.
        func encode(to encoder: any Encoder) throws {
            throw EncodingError.invalidValue(self, .init(codingPath: [], debugDescription: "a metadata BLOB is read, never written"))
        }
    }

    /// `MetadataBLOBPayloadEntry`. A UAF entry (one with an `aaid`) that cannot be read is kept as the reason, so
    /// one entry with a value this server does not know costs that authenticator only, never the whole BLOB. Its
    /// status reports are read apart from its statement, and each report field by field (``Report``): an unreadable
    /// statement or a malformed date never drops a revocation.
    struct Entry: Decodable {
        enum Content {
            /// `notes`: what of the entry could not be read, though its reports were.
            case uaf(aaid: String, statement: UAFMetadata.DecodedStatement?, reports: [StatusReport], notes: [String])
            /// A FIDO2 entry: its reports always, its statement's roots and types when they could be read.
            case fido2(FIDO2Metadata, notes: [String])
            case unreadable(String, String)
            case otherFamily
        }
        var content: Content

        enum CodingKeys: String, CodingKey { case aaid, aaguid, attestationCertificateKeyIdentifiers, metadataStatement, statusReports }

        init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            guard let aaid = try? c.decodeIfPresent(String.self, forKey: .aaid) else {
                if let aaguid = try? c.decodeIfPresent(String.self, forKey: .aaguid) {
                    guard let bytes = AAGUID.bytes(aaguid) else {
                        content = .unreadable(aaguid, "not an AAGUID")
                        return
                    }
                    content = Self.fido2(name: aaguid, aaguid: bytes, keyIdentifiers: [], c)
                } else if let keys = try? c.decodeIfPresent([String].self, forKey: .attestationCertificateKeyIdentifiers), let first = keys.first {
                    // A U2F model: no AAGUID, named by its attestation certificates' key identifiers (40 hex digits each).
                    guard keys.allSatisfy(Self.isKeyIdentifier) else {
                        content = .unreadable(first, "attestationCertificateKeyIdentifiers are not 40 hex digits each")
                        return
                    }
                    content = Self.fido2(name: "U2F key \(first)", aaguid: AAGUID.zero, keyIdentifiers: keys.map { $0.lowercased() }, c)
                } else {
                    content = .otherFamily
                }
                return
            }
            guard AAID.isValid(aaid) else {
                content = .unreadable(aaid, "not an AAID")
                return
            }
            guard let (read, reportNotes) = Self.reports(c) else {
                content = .unreadable(aaid, "statusReports is not an array of reports")
                return
            }
            var notes = reportNotes
            var statement: UAFMetadata.DecodedStatement?
            do { statement = try c.decodeIfPresent(UAFMetadata.DecodedStatement.self, forKey: .metadataStatement) } catch {
                notes.append("its statement: \(error)")
            }
            content = .uaf(aaid: aaid, statement: statement, reports: read, notes: notes)
        }

        /// The entry's status reports, each read on its own (``Report``), and what could not be read; nil when
        /// `statusReports` is not an array.
        private static func reports(_ c: KeyedDecodingContainer<CodingKeys>) -> ([StatusReport], [String])? {
            guard let reports = try? c.decode([Report].self, forKey: .statusReports) else { return nil }
            var notes: [String] = []
            var read: [StatusReport] = []
            for report in reports {
                let (statusReport, problems) = report.report()
                if let statusReport { read.append(statusReport) }
                notes += problems
            }
            return (read, notes)
        }

        /// A FIDO2 entry. As for UAF, its reports are read apart from its statement: a statement that cannot be read
        /// leaves the model without roots (no attestation of it is trusted) but never drops a revocation.
        private static func fido2(name: String, aaguid bytes: [UInt8], keyIdentifiers: [String], _ c: KeyedDecodingContainer<CodingKeys>) -> Content {
            guard let (reports, reportNotes) = reports(c) else { return .unreadable(name, "statusReports is not an array of reports") }
            var notes = reportNotes
            var entry = FIDO2Metadata(aaguid: bytes, description: "", statusReports: reports, attestationCertificateKeyIdentifiers: keyIdentifiers)
            do {
                if let statement = try c.decodeIfPresent(FIDO2Statement.self, forKey: .metadataStatement) {
                    if keyIdentifiers.isEmpty, let named = statement.aaguid, AAGUID.bytes(named) != bytes {
                        notes.append("its statement describes \(named); the statement is left out")
                    } else {
                        entry.description = statement.description
                        entry.attestationTypes = statement.attestationTypes ?? []
                        for (index, text) in (statement.attestationRootCertificates ?? []).enumerated() {
                            guard let der = Data(base64Encoded: text) else {
                                notes.append("attestationRootCertificates[\(index)] is not base64; left out")
                                continue
                            }
                            entry.attestationRootCertificates.append(Array(der))
                        }
                    }
                }
            } catch {
                notes.append("its statement: \(error)")
            }
            return .fido2(entry, notes: notes)
        }

        static func isKeyIdentifier(_ text: String) -> Bool { text.utf8.count == 40 && text.allSatisfy(\.isHexDigit) }

        /// What a WebAuthn relying party reads of a FIDO2 metadata statement.
        private struct FIDO2Statement: Decodable {
            var aaguid: String?
            var description: String
            var attestationTypes: [String]?
            var attestationRootCertificates: [String]?
        }
    }

    /// `StatusReport`: the fields a relying party acts on, each read on its own, so a report whose status can be read
    /// is never lost to another field. Why, and which way each doubt falls (closed): a date that cannot be read makes
    /// the report in force from the start (a revocation then counts at once); a certificate that cannot be read makes
    /// the report apply to every key of the authenticator, not to none. A report without a readable status is left
    /// out, with its reason.
    struct Report: Decodable {
        var status: String?
        var effectiveDate: String?
        var certificate: String?
        /// The fields present but not strings.
        var unreadable: [String] = []

        enum CodingKeys: String, CodingKey, CaseIterable { case status, effectiveDate, certificate }

        init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            func text(_ key: CodingKeys) -> String? {
                guard c.contains(key) else { return nil }
                if let value = try? c.decode(String.self, forKey: key) { return value }
                unreadable.append(key.rawValue)
                return nil
            }
            status = text(.status)
            effectiveDate = text(.effectiveDate)
            certificate = text(.certificate)
        }

        func report() -> (StatusReport?, [String]) {
            var problems = unreadable.map { "a status report's \($0) is not a string" }
            guard let status else { return (nil, problems + ["a status report without a status was left out"]) }
            var effective: Date?
            if let effectiveDate {
                effective = MetadataBLOB.day(effectiveDate)
                if effective == nil {
                    problems.append("\(status): effectiveDate \"\(effectiveDate)\" is not a YYYY-MM-DD date; in force from the start")
                }
            } else if unreadable.contains("effectiveDate") {
                problems.append("\(status): in force from the start")
            }
            var der: [UInt8]?
            if let certificate {
                der = Data(base64Encoded: certificate).map { [UInt8]($0) }
                if der == nil { problems.append("\(status): its certificate is not base64; applies to every key") }
            }
            return (StatusReport(status: AuthenticatorStatus(rawValue: status), effectiveDate: effective, certificate: der), problems)
        }
    }
}
