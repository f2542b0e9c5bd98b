import Foundation
import XCTest
import _CryptoExtras

@testable import UAF

/// Authenticator public keys the server accepts (uaf-spec §3.1): RSA keys of 2048...4096 bits only.
final class PublicKeyLimitTests: XCTestCase {
    func testA2048BitRSAKeyIsAccepted() throws {
        let key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        XCTAssertNotNil(UAFPublicKey(bytes: Array(key.publicKey.derRepresentation), encoding: .rsa2048DER))
    }

    func testAnRSAKeyOver4096BitsIsRefused() throws {
        let key = try _RSA.Signing.PrivateKey(unsafeKeySize: .init(bitCount: 4608))
        XCTAssertNil(UAFPublicKey(bytes: Array(key.publicKey.derRepresentation), encoding: .rsa2048DER))
    }
}
