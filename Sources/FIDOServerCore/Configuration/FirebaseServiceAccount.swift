import Foundation
import JWTKit

/// A Google service account's key file (the JSON Firebase hands out): what the OAuth 2.0 service-account flow needs.
package struct FirebaseServiceAccount: Decodable, Sendable {
    var type: String
    var projectID: String
    var privateKeyID: String?
    var privateKey: String
    var clientEmail: String
    var tokenURI: String?
    package enum CodingKeys: String, CodingKey {
        case type, projectID = "project_id", privateKeyID = "private_key_id", privateKey = "private_key", clientEmail = "client_email", tokenURI =
            "token_uri"
    }

    package static func load(path: String) throws -> FirebaseServiceAccount {
        let data = try ServerConfiguration.readFile(path, setting: "dispatch.firebase.serviceAccountPath")
        let account: FirebaseServiceAccount
        do { account = try JSONDecoder().decode(FirebaseServiceAccount.self, from: data) } catch {
            throw ServerConfiguration.ConfigurationError.invalid("dispatch.firebase.serviceAccountPath: not a service-account key file (\(error))")
        }
        guard account.type == "service_account", !account.projectID.isEmpty, !account.clientEmail.isEmpty else {
            throw ServerConfiguration.ConfigurationError.invalid(
                "dispatch.firebase.serviceAccountPath: type must be service_account, with project_id and client_email")
        }
        do { _ = try Insecure.RSA.PrivateKey(pem: account.privateKey) } catch {
            throw ServerConfiguration.ConfigurationError.invalid(
                "dispatch.firebase.serviceAccountPath: private_key is not an RSA key of at least 2048 bits (\(error))")
        }
        return account
    }
}
