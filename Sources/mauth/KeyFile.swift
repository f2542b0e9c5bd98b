import ArgumentParser
import Crypto
import Foundation
import Primitives

/// The PEM P-256 private key in the file at `path`, for the commands that take one (`mauth admin token --key`,
/// `mauth admin signing-key add --pem`, `mauth load --relying-party-key`): a file that cannot be read, or that holds
/// anything else, is a usage error naming the option and the file.
func readP256PrivateKey(_ path: String, option: String) throws -> P256.Signing.PrivateKey {
    let text: String
    do { text = try String(contentsOfFile: path, encoding: .utf8) } catch {
        throw ValidationError("\(option) \(path): \(SystemErrorText.reason(error))")
    }
    guard let key = try? P256.Signing.PrivateKey(pemRepresentation: text) else {
        throw ValidationError("\(option) \(path): not a PEM P-256 private key")
    }
    return key
}
