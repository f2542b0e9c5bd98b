import Foundation
import SwiftASN1
import X509

extension ServerConfiguration {
    /// The PEM certificates of the file at `path`, which `setting` names: at least one. A file that cannot be read,
    /// is not PEM certificates or holds none stops the start with the setting's path.
    package static func readCertificates(_ path: String, setting: String) throws -> [Certificate] {
        let text = String(decoding: try readFile(path, setting: setting), as: UTF8.self)
        let certificates: [Certificate]
        do { certificates = try PEMDocument.parseMultiple(pemString: text).map { try Certificate(pemDocument: $0) } } catch {
            throw ConfigurationError.invalid("\(setting) \(path): not PEM certificates (\(error))")
        }
        guard !certificates.isEmpty else { throw ConfigurationError.invalid("\(setting) \(path): no certificate") }
        return certificates
    }
}
