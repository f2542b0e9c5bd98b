import AppAttestation
import CBOR
import Crypto
import FIDOSimulation
import Foundation
import JOSE
import NevisProtocol
import Primitives
@_spi(Fuzzing) import SecureStorage
import UAF
import WebAuthn
import WireJSON

/// The committed seed corpus (`Fuzz/corpus/<target>/`), made from real messages: what `mauth-fuzz seeds` writes.
/// Seeds that need a key use `FuzzKeys`, so that mutations start from inputs that verify, decrypt and load.
public enum FuzzSeeds {
    public static func make() throws -> [FuzzTarget: [String: [UInt8]]] {
        let appID = "https://rp.example/facets.json"
        var device = SoftwareAuthenticator()
        device.channelBinding = ChannelBinding(serverEndPoint: "c2VydmVy", tlsUnique: "dW5pcXVl")
        let policy = Policy(accepted: [[MatchCriteria(aaid: ["F1D0#1001"])]], disallowed: [MatchCriteria(aaid: ["F1D0#0000"])])
        let registrationRequest = RegistrationRequest(
            header: OperationHeader(
                op: .registration, appID: appID, serverData: "c2VydmVyRGF0YQ",
                exts: [Extension(id: "ext", data: "ZGF0YQ", failIfUnknown: false)]),
            challenge: "Y2hhbGxlbmdlMQ", username: "alice", policy: policy)
        let registration = try device.register(registrationRequest, serverAppID: appID)
        let login = AuthenticationRequest(
            header: OperationHeader(op: .authentication, appID: appID, serverData: "c2Q"),
            challenge: "Y2hhbGxlbmdlMg", policy: policy)
        let payment = AuthenticationRequest(
            header: login.header, challenge: "Y2hhbGxlbmdlMw",
            transaction: [Transaction(contentType: "text/plain", content: Base64URL.encode(Array("Pay EUR 10 to Carol".utf8)))],
            policy: policy)
        let loginResponse = try device.authenticate(login, serverAppID: appID)
        let paymentResponse = try device.authenticate(payment, serverAppID: appID)
        let deregistration = DeregistrationRequest(
            header: OperationHeader(op: .deregistration, appID: appID),
            authenticators: [DeregisterAuthenticator(aaid: "F1D0#1001", keyID: Base64URL.encode(device.keyID))])

        func json<T: Encodable>(_ messages: [T]) throws -> [UInt8] { Array(try UAFMessageCodec.encode(messages).utf8) }
        func assertion(_ text: String) -> [UInt8] { Base64URL.decodeBytes(text) ?? [] }

        var seeds: [FuzzTarget: [String: [UInt8]]] = [:]
        seeds[.tlv] = [
            "registration-assertion": assertion(registration.assertions[0].assertion),
            "authentication-assertion": assertion(loginResponse.assertions[0].assertion),
            "transaction-assertion": assertion(paymentResponse.assertions[0].assertion),
        ]
        seeds[.uafMessage] = [
            "registration-request": try json([registrationRequest]),
            "registration-response": try json([registration]),
            "authentication-request": try json([login]),
            "transaction-request": try json([payment]),
            "authentication-response": try json([loginResponse]),
            "transaction-response": try json([paymentResponse]),
            "deregistration-request": try json([deregistration]),
        ]
        seeds[.fcParams] = [
            "registration": Base64URL.decodeBytes(registration.fcParams) ?? [],
            "escapes": Array(#"{"appID":"https:\/\/a.example","challenge":"\u00e9\ud83d\ude00\n\t\"\\","facetID":"f","channelBinding":{}}"#.utf8),
            "unknown-members": Array(
                #" { "x" : [1, -2.5e+3, true, false, null, {"y": []}], "facetID":"f", "challenge":"c", "appID":"a", "channelBinding":{"cid_pubkey":"k","tlsServerCertificate":"t","z":0} } "#
                    .utf8),
        ]
        let jwsPayload = Array(#"{"sub":"alice","aud":"mauth"}"#.utf8)
        let content = DispatchPayload.Content(
            token: "dGhlLXRva2Vu", redeemURL: "https://rp.example/nevisfido/token/redeem/authentication",
            data: "eyJ0cmFuc2FjdGlvbiI6InBheSJ9")
        let encrypted = try DispatchPayload.encrypted(content, to: FuzzKeys.agreement.publicKey, keyID: "device-key-1")
        seeds[.jose] = [
            "jws": Array(try JWS.sign(jwsPayload, header: JWSHeader(kid: "rp-key-1", typ: "JWT"), key: FuzzKeys.signing).utf8),
            "jwe": Array(try JWE.encrypt(jwsPayload, to: FuzzKeys.agreement.publicKey, keyID: "device-key-1", contentType: "application/json").utf8),
        ]
        seeds[.oobPayload] = [
            "plain-json": Array(DispatchPayload.plain(content).utf8),
            "encrypted-json": Array(encrypted.utf8),
            "plain-base64url": Array(Base64URL.encode(Array(DispatchPayload.plain(content).utf8)).utf8),
            "encrypted-link": Array(DispatchPayload.link(base: "https://rp.example/open?x=1", payload: encrypted).utf8),
        ]
        let store = try StoreFileParsing.file(
            entries: [Array("pin".utf8): Array("1234".utf8), Array("device-key".utf8): Array(repeating: 0xA5, count: 64), []: []],
            storeID: Array(repeating: 0x11, count: 16), generation: 42, dataKey: FuzzKeys.storeDataKey, kek: FuzzKeys.storeKEK)
        let empty = try StoreFileParsing.file(
            entries: [:], storeID: Array(repeating: 0x22, count: 16), generation: 1,
            dataKey: FuzzKeys.storeDataKey, kek: FuzzKeys.storeKEK)
        seeds[.wireJSON] = [
            "authentication-response": try json([loginResponse]),
            "send-uaf-response": try WireJSONEncoder().encode(SendUAFResponse(uafResponse: try UAFMessageCodec.encode([paymentResponse]))),
            "scalars": Array(#" [null, true, false, 0, -1, 9223372036854775807, -9223372036854775808, 1.5, -2.5e+3, 1E-7, 1.0, 1e2, "", "x"] "#.utf8),
            "escapes": Array(#"{"a\/b":"\u00e9\ud83d\ude00\n\t\"\\\b\f\r\u0001","é😀":"","":{}}"#.utf8),
            "nested": Array(#"{"z":[[],[{}],[[1,[2,[3]]]]],"a":{"b":{"c":{"d":null}}},"m":[{"k":1,"j":2}]}"#.utf8),
        ]
        seeds[.secureStorageFile] = ["store-resealed": [0] + store, "store-as-is": [1] + store, "empty-store": [0] + empty]
        // A COSE EC2 key and an attestation object's shape (fmt "none"), and every kind of item.
        let coseKey = CBOR.map(
            CBORMap([
                .init(.int(1), .int(2)), .init(.int(3), .int(-7)), .init(.int(-1), .int(1)),
                .init(.int(-2), .bytes(Array(repeating: 0x11, count: 32))),
                .init(.int(-3), .bytes(Array(repeating: 0x22, count: 32))),
            ]))
        let attestationObject = CBOR.map(
            CBORMap([
                .init(.text("fmt"), .text("none")), .init(.text("attStmt"), .map(CBORMap())),
                .init(.text("authData"), .bytes(Array(repeating: 0x33, count: 37) + CBOREncoder.encode(coseKey))),
            ]))
        let everything = CBOR.array([
            .unsigned(0), .unsigned(.max), .negative(.max), .int(-24), .bytes([]), .text("é😀"),
            .tagged(1000, .array([])), .simple(16), .simple(255), .bool(true), .null, .undefined,
            .float(1.5), .float(100000), .float(1.1), .float(.nan), .float(-.infinity),
        ])
        seeds[.cbor] = [
            "cose-key": CBOREncoder.encode(coseKey),
            "attestation-object": CBOREncoder.encode(attestationObject),
            "every-kind": CBOREncoder.encode(everything),
            "not-canonical": [0xa2, 0x03, 0x18, 0x04, 0x01, 0xfb, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0],
        ]
        // Authenticator data: an assertion's 37 bytes; registrations with an EC2, an OKP and an RSA key, one with
        // extensions.
        let rpIDHash = Array(SHA256.hash(data: Data("example.org".utf8)))
        let okp = COSEKey(try Curve25519.Signing.PrivateKey(rawRepresentation: Array(repeating: 7, count: 32)).publicKey).encoded
        let rsa = CBOREncoder.encode(
            .map(
                CBORMap([
                    .init(.int(1), .int(3)), .init(.int(3), .int(-257)),
                    .init(.int(-1), .bytes([0xc1] + Array(repeating: 0x5b, count: 254) + [0x01])), .init(.int(-2), .bytes([1, 0, 1])),
                ])))
        let ec2 = COSEKey(FuzzKeys.signing.publicKey).encoded
        func authenticatorData(_ key: [UInt8], flags: UInt8 = 0x5d, extensions: [UInt8] = []) -> [UInt8] {
            rpIDHash + [flags, 0, 0, 0, 3] + Array(repeating: 0xAA, count: 16) + [0, 4, 1, 2, 3, 4] + key + extensions
        }
        seeds[.webAuthn] = [
            "assertion": rpIDHash + [0x05, 0, 0, 0, 9],
            "registration-ec2": authenticatorData(ec2),
            "registration-okp": authenticatorData(okp),
            "registration-rsa": authenticatorData(rsa),
            "registration-extensions": authenticatorData(
                ec2, flags: 0xdd, extensions: CBOREncoder.encode(.map(CBORMap([.init(.text("credProtect"), .unsigned(2))])))),
        ]
        // Attestation: a client data hash, then the object. The W3C vectors' objects (every other format) are committed
        // beside these, made by Fuzz/make-attestation-seeds.py.
        let clientDataHash = Array(SHA256.hash(data: Array("mauth-fuzz/clientData".utf8)))
        let registered = authenticatorData(ec2, flags: 0x45)
        let selfSignature = Array(try FuzzKeys.signing.signature(for: registered + clientDataHash).derRepresentation)
        let packedSelf = CBOR.map(CBORMap([.init(.text("alg"), .int(-7)), .init(.text("sig"), .bytes(selfSignature))]))
        func object(_ format: String, _ statement: CBOR) -> [UInt8] {
            clientDataHash
                + CBOREncoder.encode(
                    .map(
                        CBORMap([
                            .init(.text("fmt"), .text(format)), .init(.text("attStmt"), statement),
                            .init(.text("authData"), .bytes(registered)),
                        ])))
        }
        func entry(_ format: String, _ statement: CBOR) -> CBOR {
            .map(CBORMap([.init(.text("fmt"), .text(format)), .init(.text("attStmt"), statement)]))
        }
        seeds[.attestation] = [
            "none": object("none", .map(CBORMap())),
            "packed-self": object("packed", packedSelf),
            "compound": object("compound", .array([entry("packed", packedSelf), entry("none", .map(CBORMap()))])),
        ]
        // App Attest: an attestation and an assertion of the fuzz key, under a software authority (the target checks
        // every step but the chain).
        let appAttestKey = SoftwareAppAttestKey(privateKey: FuzzKeys.signing)
        let authority = try SoftwareAppAttestAuthority()
        seeds[.appAttest] = [
            "attestation": try authority.attest(
                appAttestKey, appID: AppAttestTarget.appID, environment: .development, clientDataHash: AppAttestTarget.clientDataHash),
            "assertion": try appAttestKey.assertion(appID: AppAttestTarget.appID, counter: 1, clientDataHash: AppAttestTarget.clientDataHash),
        ]
        return seeds
    }
}
