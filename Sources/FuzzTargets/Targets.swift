@_spi(Fuzzing) import AppAttestation
import CBOR
import Crypto
import Foundation
import JOSE
import NevisProtocol
import Primitives
@_spi(Fuzzing) import SecureStorage
import TestSupport
import UAF
import WebAuthn
import WireJSON
import X509

enum TLVTarget {
    static func run(_ input: [UInt8]) throws(FuzzFinding) -> Bool {
        var accepted = false
        if let elements = try? TLVDecoder.decodeSequence(input[...]) {
            try checkTree(elements, covering: input[...])
        }
        if let assertion = try? RegistrationAssertion(bytes: input) {
            try checkRoundTrip(assertion)
            accepted = true
        }
        if let assertion = try? AuthenticationAssertion(bytes: input) {
            try checkRoundTrip(assertion)
            accepted = true
        }
        return accepted
    }

    /// Decoded elements tile their input exactly: each is its 4-byte header and its value, and a composite's
    /// children tile its value.
    private static func checkTree(_ elements: [TLVElement], covering bytes: ArraySlice<UInt8>) throws(FuzzFinding) {
        var offset = bytes.startIndex
        for element in elements {
            try require(element.encoded.startIndex == offset, .tlv, "element at \(element.encoded.startIndex) after \(offset)")
            try require(element.encoded.count == element.value.count + 4, .tlv, "element is not header + value")
            try require(element.value.startIndex == offset + 4, .tlv, "value does not follow its header")
            let length = Int(bytes[offset + 2]) | Int(bytes[offset + 3]) << 8
            try require(length == element.value.count, .tlv, "length \(length) but value of \(element.value.count) bytes")
            if element.tag.isComposite {
                try checkTree(element.children, covering: element.value)
            } else {
                try require(element.children.isEmpty, .tlv, "a leaf with children")
            }
            offset = element.encoded.endIndex
        }
        try require(offset == bytes.endIndex, .tlv, "elements end at \(offset), input at \(bytes.endIndex)")
    }

    /// An accepted assertion, assembled again from what was parsed (signed bytes kept verbatim), parses to itself.
    private static func checkRoundTrip(_ assertion: RegistrationAssertion) throws(FuzzFinding) {
        try checkRoundTrip(assertion, "registration") {
            try RegistrationAssertion(
                bytes: RegistrationAssertion.encode(
                    signedKRD: $0.signedBytes, attestation: $0.attestation, unsignedExtensions: $0.unsignedExtensions))
        }
    }

    private static func checkRoundTrip(_ assertion: AuthenticationAssertion) throws(FuzzFinding) {
        try checkRoundTrip(assertion, "authentication") {
            try AuthenticationAssertion(
                bytes: AuthenticationAssertion.encode(
                    signedData: $0.signedBytes, signature: $0.signature, unsignedExtensions: $0.unsignedExtensions))
        }
    }

    private static func checkRoundTrip<Assertion: Equatable>(
        _ assertion: Assertion, _ kind: String,
        _ reassemble: (Assertion) throws -> Assertion
    ) throws(FuzzFinding) {
        let again: Assertion
        do { again = try reassemble(assertion) } catch {
            throw FuzzFinding(target: FuzzTarget.tlv.rawValue, message: "an accepted \(kind) assertion does not re-encode: \(error)")
        }
        try require(again == assertion, .tlv, "\(kind) assertion changed in a round trip")
    }
}

enum UAFMessageTarget {
    static func run(_ input: [UInt8]) throws(FuzzFinding) -> Bool {
        guard let text = String(validating: input, as: UTF8.self) else { return false }
        var accepted = try roundTrip(RegistrationRequest.self, text) != nil
        accepted = try roundTrip(AuthenticationRequest.self, text) != nil || accepted
        accepted = try roundTrip(DeregistrationRequest.self, text) != nil || accepted
        if let responses = try roundTrip(RegistrationResponse.self, text) {
            for response in responses {
                try FCParamsTarget.checkDecoded(response.fcParams)
                for assertion in response.assertions { _ = try TLVTarget.run(Base64URL.decodeBytes(assertion.assertion) ?? []) }
            }
            accepted = true
        }
        if let responses = try roundTrip(AuthenticationResponse.self, text) {
            for response in responses {
                try FCParamsTarget.checkDecoded(response.fcParams)
                for assertion in response.assertions { _ = try TLVTarget.run(Base64URL.decodeBytes(assertion.assertion) ?? []) }
            }
            accepted = true
        }
        return accepted
    }

    /// What decodes, encodes, and the encoding decodes to the same messages.
    @discardableResult
    private static func roundTrip<T: Codable & Equatable>(_ type: T.Type, _ text: String) throws(FuzzFinding) -> [T]? {
        guard let messages = try? UAFMessageCodec.decode(T.self, from: text) else { return nil }
        let again: [T]
        do { again = try UAFMessageCodec.decode(T.self, from: UAFMessageCodec.encode(messages)) } catch {
            throw FuzzFinding(target: FuzzTarget.uafMessage.rawValue, message: "decoded \(T.self) does not survive a round trip: \(error)")
        }
        try require(again == messages, .uafMessage, "\(T.self) changed in a round trip")
        return messages
    }
}

enum FCParamsTarget {
    static func run(_ input: [UInt8]) throws(FuzzFinding) -> Bool {
        try checkDecoded(Base64URL.encode(input))
    }

    /// When our parser accepts fcParams, Foundation's JSON parser (an independent implementation) reads the same
    /// JSON to the same values, and the params re-encode to themselves.
    @discardableResult
    static func checkDecoded(_ fcParams: String) throws(FuzzFinding) -> Bool {
        guard let params = FinalChallengeParams.decode(fcParams: fcParams) else { return false }
        let json = Base64URL.decodeBytes(fcParams) ?? []
        let object = try? JSONSerialization.jsonObject(with: Data(json), options: [.fragmentsAllowed]) as? [String: Any]
        try require(object != nil, .fcParams, "accepted JSON that Foundation refuses: \(String(decoding: json, as: UTF8.self).debugDescription)")
        guard let object else { return true }
        try require(object["appID"] as? String == params.appID, .fcParams, "appID differs from Foundation's reading")
        try require(object["challenge"] as? String == params.challenge, .fcParams, "challenge differs from Foundation's reading")
        try require(object["facetID"] as? String == params.facetID, .fcParams, "facetID differs from Foundation's reading")
        let binding = object["channelBinding"] as? [String: Any]
        try require(binding != nil, .fcParams, "channelBinding is not an object for Foundation")
        try require(binding?["serverEndPoint"] as? String == params.channelBinding.serverEndPoint, .fcParams, "serverEndPoint differs")
        try require(
            binding?["tlsServerCertificate"] as? String == params.channelBinding.tlsServerCertificate, .fcParams, "tlsServerCertificate differs")
        try require(binding?["tlsUnique"] as? String == params.channelBinding.tlsUnique, .fcParams, "tlsUnique differs")
        try require(binding?["cid_pubkey"] as? String == params.channelBinding.cidPubkey, .fcParams, "cid_pubkey differs")
        let encoded: String
        do { encoded = try params.encodedFCParams() } catch {
            throw FuzzFinding(target: FuzzTarget.fcParams.rawValue, message: "accepted params do not encode: \(error)")
        }
        try require(FinalChallengeParams.decode(fcParams: encoded) == params, .fcParams, "params changed in a round trip")
        return true
    }
}

enum JOSETarget {
    static func run(_ input: [UInt8]) throws(FuzzFinding) -> Bool {
        var accepted = false
        let text = String(decoding: input, as: UTF8.self)
        if let verified = try? JWS.verify(text, key: FuzzKeys.signing.publicKey) {
            // A signature binds the key: the same token under another key is refused.
            try require((try? JWS.verify(text, key: FuzzKeys.otherSigning.publicKey)) == nil, .jose, "a JWS verifies under two keys")
            try require(verified.header.alg == "ES256", .jose, "a JWS verified with alg \(verified.header.alg)")
            accepted = true
        }
        if let decrypted = try? JWE.decrypt(text, key: FuzzKeys.agreement) {
            try require((try? JWE.decrypt(text, key: FuzzKeys.otherAgreement)) == nil, .jose, "a JWE decrypts under two keys")
            try require(
                decrypted.header.alg == JWE.keyManagementAlgorithm && decrypted.header.enc == JWE.contentEncryption, .jose,
                "a JWE decrypted with alg \(decrypted.header.alg) enc \(decrypted.header.enc)")
            accepted = true
        }
        return accepted
    }
}

enum OOBPayloadTarget {
    static func run(_ input: [UInt8]) throws(FuzzFinding) -> Bool {
        var accepted = false
        let text = String(decoding: input, as: UTF8.self)
        for envelope in [try? DispatchPayload.parse(json: text), try? DispatchPayload.parse(base64URL: text)].compactMap({ $0 }) {
            guard let content = try? envelope.open(with: { FuzzKeys.agreement }) else { continue }
            // What a device accepts, a server could have sent: the plain form of the content parses back to it.
            let again = try? DispatchPayload.parse(json: DispatchPayload.plain(content))
            try require(again == .plain(content, version: DispatchPayload.version), .oobPayload, "accepted content does not round-trip")
            accepted = true
        }
        return accepted
    }
}

enum SecureStorageFileTarget {
    /// The first byte picks how the rest is used: odd, the file as is; even, with its MAC and checksum recomputed
    /// under the fixed data key, so that mutations get past the integrity checks into the parser and entry opening.
    static func run(_ input: [UInt8]) throws(FuzzFinding) -> Bool {
        guard let mode = input.first else { return false }
        let body = Array(input.dropFirst())
        let file = mode & 1 == 1 ? body : StoreFileParsing.resealed(body, dataKey: FuzzKeys.storeDataKey)
        guard let entries = try? StoreFileParsing.load(file, kek: FuzzKeys.storeKEK) else { return false }
        // Whatever loads, written again, loads to the same entries.
        let again = try? StoreFileParsing.load(
            StoreFileParsing.file(
                entries: entries, storeID: Array(repeating: 7, count: 16), generation: 1,
                dataKey: FuzzKeys.storeDataKey, kek: FuzzKeys.storeKEK),
            kek: FuzzKeys.storeKEK)
        try require(again == entries, .secureStorageFile, "loaded entries do not survive a rewrite")
        return true
    }
}

enum WireJSONTarget {
    /// What the wire decoder accepts, Foundation's `JSONDecoder` (an independent implementation) accepts too and reads
    /// to the same value, but for the one documented difference (``JSONTree/matches(_:)``); written again by the wire
    /// encoder, it is the very bytes Foundation's `JSONEncoder` writes, and it reads back to itself.
    static func run(_ input: [UInt8]) throws(FuzzFinding) -> Bool {
        guard let tree = try? WireJSONDecoder().decode(JSONTree.self, from: input) else { return false }
        let shown = String(decoding: input.prefix(200), as: UTF8.self).debugDescription
        let foundation = try? JSONDecoder().decode(JSONTree.self, from: Data(input))
        try require(foundation != nil, .wireJSON, "accepted JSON that Foundation refuses: \(shown)")
        try require(foundation.map(tree.matches) == true, .wireJSON, "read differently from Foundation: \(shown)")
        let written = try? WireJSONEncoder().encode(tree)
        try require(
            written != nil && written == (try? foundationWireEncoder().encode(tree)).map { Array($0) }, .wireJSON,
            "written otherwise than Foundation writes it: \(shown)")
        // A whole Double is written without its ".0" (as Foundation writes it) and so reads back as an Int.
        let again = written.flatMap { try? WireJSONDecoder().decode(JSONTree.self, from: $0) }
        try require(again.map(tree.matches) == true, .wireJSON, "changed in a round trip: \(shown)")
        return true
    }
}

enum CBORTarget {
    /// What the canonical rules accept, the encoder writes back byte for byte; what either rule set accepts, the
    /// other reads to the same value or (the well-formed reader) accepts where the canonical one refuses; a value
    /// read under the well-formed rules, encoded, reads back to itself under the canonical rules.
    static func run(_ input: [UInt8]) throws(FuzzFinding) -> Bool {
        let shown = hexPrefix(input)
        let canonical = try? CBORDecoder(rules: .canonical).decode(input)
        let lenient = try? CBORDecoder(rules: .wellFormed).decode(input)
        if let canonical {
            try require(CBOREncoder.encode(canonical) == input, .cbor, "canonical input written back otherwise: \(shown)")
            try require(lenient.map { Self.same($0, canonical) } == true, .cbor, "canonical input refused or read otherwise as well-formed: \(shown)")
        }
        guard let lenient else { return false }
        let written = CBOREncoder.encode(lenient)
        let again = try? CBORDecoder(rules: .canonical).decode(written)
        try require(again.map { Self.same($0, lenient) } == true, .cbor, "a well-formed value did not survive canonical encoding: \(shown)")
        return true
    }

    /// The same value: the same canonical encoding. Maps compare whatever the order of their entries (the encoder
    /// sorts them, and a decoded map has no repeated key), every NaN is one, and it costs a sort, not the quadratic
    /// walk a structural comparison of maps would (which held the fuzzer to 600 inputs a second on large maps).
    static func same(_ a: CBOR, _ b: CBOR) -> Bool { CBOREncoder.encode(a) == CBOREncoder.encode(b) }
}

enum WebAuthnTarget {
    /// Accepted authenticator data is exactly its parts: the 37 fixed bytes, the attested credential data (AAGUID,
    /// length, ID, the key's bytes as received), then the extensions, which read again to the same map; an accepted
    /// credential key reads again from its own bytes to the same algorithm and verifies no signature made of the input.
    static func run(_ input: [UInt8]) throws(FuzzFinding) -> Bool {
        guard let data = try? AuthenticatorData(bytes: input) else { return false }
        let shown = hexPrefix(input)
        var rebuilt = data.rpIDHash + [data.flags.rawValue] + (0..<4).map { UInt8(truncatingIfNeeded: data.signCount >> (24 - 8 * $0)) }
        if let attested = data.attestedCredentialData {
            rebuilt += attested.aaguid + [UInt8(attested.credentialID.count >> 8), UInt8(attested.credentialID.count & 0xff)]
            rebuilt += attested.credentialID + attested.publicKey.encoded
            let again = try? COSEKey(bytes: attested.publicKey.encoded)
            try require(again?.algorithm == attested.publicKey.algorithm, .webAuthn, "a credential key does not read again from its bytes: \(shown)")
            try require(
                !attested.publicKey.isValidSignature(Array(input.suffix(64)), for: input), .webAuthn,
                "a signature made of the input verified: \(shown)")
        }
        try require(input.starts(with: rebuilt), .webAuthn, "the parts are not the input's bytes: \(shown)")
        let rest = Array(input[rebuilt.count...])
        if let extensions = data.extensions {
            let again = try? CBORDecoder(rules: .wellFormed).decode(rest)
            try require(
                again.map { CBORTarget.same($0, .map(extensions)) } == true, .webAuthn,
                "the extensions do not read again to themselves: \(shown)")
        } else {
            try require(rest.isEmpty, .webAuthn, "bytes after the parts: \(shown)")
        }
        return true
    }
}

enum AttestationTarget {
    /// When the statements are judged: inside the validity of the seeds' certificates (the W3C vectors', 2024 to 3024).
    static let now = Date(timeIntervalSince1970: 1_790_000_000)

    /// The input is a client data hash (32 bytes) and an attestation object. An object that verifies is of a
    /// supported format, its type fits its format, and its trust path is exactly the certificates its statement carries
    /// (for SafetyNet, those of the JWS header, which the fuzzer rarely reaches intact).
    static func run(_ input: [UInt8]) throws(FuzzFinding) -> Bool {
        guard input.count > 32 else { return false }
        let clientDataHash = Array(input[..<32])
        guard let object = try? AttestationObject(bytes: Array(input[32...])),
            let verified = try? object.verify(clientDataHash: clientDataHash, now: now)
        else { return false }
        let shown = hexPrefix(input)
        try require(verified.format == object.format, .attestation, "verified as \(verified.format), sent as \(object.format): \(shown)")
        switch verified.type {
        // A compound takes its type from its statements.
        case .none:
            try require(
                ["none", "compound"].contains(object.format) && verified.trustPath.isEmpty, .attestation,
                "a none type from \(object.format): \(shown)")
        case .self:
            try require(
                ["packed", "compound"].contains(object.format) && verified.trustPath.isEmpty, .attestation,
                "a self type from \(object.format) or with a trust path: \(shown)")
        default: try require(!verified.trustPath.isEmpty, .attestation, "a \(verified.type) attestation without a trust path: \(shown)")
        }
        if object.format != "compound", object.format != "android-safetynet", !verified.trustPath.isEmpty {
            let x5c = object.statement.map?[text: "x5c"]?.array?.compactMap(\.bytes)
            try require(x5c == verified.trustPath, .attestation, "the trust path is not the statement's x5c: \(shown)")
        }
        return true
    }
}

enum RevocationListTarget {
    /// An accepted list reads again from the same bytes to the same issuer, dates and serial numbers; every serial
    /// number is a DER INTEGER's content (not empty, no redundant leading byte); and no certificate made here, for a
    /// key that never signed the input, verifies it.
    static let stranger: Certificate? = {
        let key = P256.Signing.PrivateKey()
        guard let name = try? DistinguishedName(derEncoded: [0x30, 0x00]) else { return nil }
        return try? Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(key.publicKey), notValidBefore: Date(timeIntervalSince1970: 0),
            notValidAfter: Date(timeIntervalSince1970: 4_000_000_000), issuer: name, subject: name,
            signatureAlgorithm: .ecdsaWithSHA256, extensions: Certificate.Extensions(), issuerPrivateKey: .init(key))
    }()

    static func run(_ input: [UInt8]) throws(FuzzFinding) -> Bool {
        guard let list = try? RevocationList(derEncoded: input) else { return false }
        let shown = hexPrefix(input)
        let again = try? RevocationList(derEncoded: input)
        try require(
            again?.issuer == list.issuer && again?.thisUpdate == list.thisUpdate && again?.nextUpdate == list.nextUpdate
                && again?.revokedSerialNumbers == list.revokedSerialNumbers, .crl, "a list does not read again to itself: \(shown)")
        for serial in list.revokedSerialNumbers {
            try require(!serial.isEmpty, .crl, "an empty serial number: \(shown)")
        }
        if let stranger {
            try require(!list.isSigned(by: stranger), .crl, "a list verified under a key that never signed it: \(shown)")
        }
        return true
    }
}

enum AppAttestTarget {
    static let appID = "ABCDE12345.ch.nevis.mauth.fuzz"
    static let clientDataHash = Array(SHA256.hash(data: Array("mauth-fuzz/app-attest".utf8)))
    static let verifier = AppleAppAttest(appIDs: [appID], environments: Set(AppAttestEnvironment.allCases), roots: [])
    static var key: AttestedAppKey {
        let point = Array(FuzzKeys.signing.publicKey.x963Representation)
        return AttestedAppKey(
            keyID: Array(SHA256.hash(data: point)), publicKey: point, appID: appID, environment: .development, counter: 0, receipt: [])
    }

    /// The input is an attestation object or an assertion. An attestation that passes every step but the chain
    /// attests the fuzz key with counter 0; an assertion that verifies under the fuzz key does not under another.
    static func run(_ input: [UInt8]) throws(FuzzFinding) -> Bool {
        let key = Self.key
        let shown = hexPrefix(input)
        if let (attested, _) = try? verifier.checkAttestation(input, keyID: key.keyID, clientDataHash: clientDataHash) {
            try require(attested.publicKey == key.publicKey && attested.counter == 0, .appAttest, "attested another key: \(shown)")
            return true
        }
        guard let counter = try? verifier.verifyAssertion(input, clientDataHash: clientDataHash, key: key, storedCounter: 0) else { return false }
        try require(counter > 0, .appAttest, "an assertion with counter 0 passed: \(shown)")
        let other = Array(FuzzKeys.otherSigning.publicKey.x963Representation)
        let wrong = AttestedAppKey(keyID: key.keyID, publicKey: other, appID: appID, environment: .development, counter: 0, receipt: [])
        try require(
            (try? verifier.verifyAssertion(input, clientDataHash: clientDataHash, key: wrong, storedCounter: 0)) == nil, .appAttest,
            "an assertion verified under a key that did not make it: \(shown)")
        return true
    }
}
