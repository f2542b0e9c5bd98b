import AppAttestation
import Crypto
import Foundation
import X509
import XCTest

/// One of the real App Attest objects in `Vectors/` (their source and licence are in `Vectors/README.md`), with what
/// a verifier is given and must conclude.
struct AppAttestVector {
    let name: String
    let json: [String: Any]

    static func load(_ name: String) throws -> AppAttestVector {
        let directory = try XCTUnwrap(Bundle.module.url(forResource: "Vectors", withExtension: nil))
        let data = try Data(contentsOf: directory.appendingPathComponent("\(name).json"))
        return AppAttestVector(name: name, json: try XCTUnwrap(try JSONSerialization.jsonObject(with: data) as? [String: Any]))
    }

    static let attestations = ["attestation-2020-kayak", "attestation-ios27", "attestation-2020-dev-poc", "attestation-2020-ios14_2-dev"]
    static let assertions = ["assertion-2020-kayak", "assertion-2020-ios14_2-dev"]

    var given: [String: Any] { json["given"] as! [String: Any] }
    var expected: [String: Any] { json["expected"] as! [String: Any] }

    /// The object's bytes, from standard base64 or base64url as the file says.
    var object: [UInt8] {
        let text = (given["attestationObject"] ?? given["assertion_base64"]) as! String
        var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
            .trimmingCharacters(in: .whitespacesAndNewlines)
        while standard.count % 4 != 0 { standard += "=" }
        return Array(Data(base64Encoded: standard)!)
    }

    var keyID: [UInt8] { Array(Data(base64Encoded: given["keyId_base64"] as! String)!) }
    var appID: String { expected["appId"] as! String }
    var environment: AppAttestEnvironment { AppAttestEnvironment(rawValue: expected["environment"] as! String)! }
    var clientData: [UInt8] { hex((given["clientData"] as! [String: Any])["hex"] as! String) }
    /// Apple's sample (iOS 27) signed the raw challenge; every other vector SHA-256 of it.
    var hashesClientData: Bool { (given["clientDataHash_rule"] as! String).hasPrefix("SHA-256") }
    func clientDataHash(of clientData: [UInt8]) -> [UInt8] { hashesClientData ? Array(SHA256.hash(data: clientData)) : clientData }
    var clientDataHash: [UInt8] { hex(given["clientDataHash_hex"] as! String) }

    var time: Date { Self.date(expected["verificationTime"] as! String) }
    var window: (from: Date, to: Date) {
        let window = expected["chainValidWindow"] as! [String: Any]
        return (Self.date(window["from"] as! String), Self.date(window["to"] as! String))
    }
    var publicKey: [UInt8] { hex((expected["publicKey"] as! [String: Any])["x962_uncompressed_hex"] as! String) }

    /// The stored key an assertion verifies with (its paired attestation's).
    var storedKey: AttestedAppKey {
        let stored = json["storedCredential"] as! [String: Any]
        let key = hex((stored["publicKey"] as! [String: Any])["x962_uncompressed_hex"] as! String)
        return AttestedAppKey(
            keyID: Array(Data(base64Encoded: stored["keyId_base64"] as! String)!), publicKey: key, appID: stored["appId"] as! String,
            environment: environment, counter: 0, receipt: [])
    }

    /// The mutation of `id` this vector lists.
    func mutation(_ id: String) -> [String: Any]? {
        (json["mustRefuse"] as! [[String: Any]]).first { $0["id"] as? String == id }
    }

    static func date(_ text: String) -> Date { ISO8601DateFormatter().date(from: text)! }
}

func hex(_ text: String) -> [UInt8] {
    var bytes: [UInt8] = []
    var index = text.startIndex
    while index < text.endIndex {
        let next = text.index(index, offsetBy: 2)
        bytes.append(UInt8(text[index..<next], radix: 16)!)
        index = next
    }
    return bytes
}

extension AppleAppAttest {
    /// A verifier that accepts only `vector`'s app, its environment and Apple's root.
    init(
        for vector: AppAttestVector, appID: String? = nil, environment: AppAttestEnvironment? = nil, roots: [Certificate] = [AppleAppAttest.appleRoot]
    ) {
        self.init(appIDs: [appID ?? vector.appID], environments: [environment ?? vector.environment], roots: roots)
    }
}

/// The reason `body` throws, or nil when it returns.
func refusal<T>(_ body: () async throws(AppAttestError) -> T) async -> AppAttestError.Reason? {
    do {
        _ = try await body()
        return nil
    } catch { return error.reason }
}
