import FIDOAttestation
import Foundation

/// The names people know their passkeys' providers by ("iCloud Keychain", "Google Password Manager", "YubiKey 5
/// Series"), by the AAGUID a passkey's authenticator sent: for the user's list of her passkeys and the operator's view.
///
/// Three sources, the first that knows the AAGUID wins: the operator's file (`fido2.providerNamesPath`, read at
/// start), the list bundled with the server (`PasskeyProviders.json`: the community list
/// passkeydeveloper/passkey-authenticator-aaguids, names only), and the FIDO Metadata Service's description of the
/// model (security keys; synced passkeys are not in it). Both files have the community list's format,
/// `{"<aaguid>": {"name": "…", …}}`, so an operator can drop in its newest `aaguid.json`. The all-zero AAGUID (a
/// browser asked for no attestation may send it) names no provider. A name is display text the server never acts on.
package struct PasskeyProviders: Sendable {
    /// Names by lower-case AAGUID: the operator's over the bundled list.
    let names: [String: String]

    /// The longest name kept, in characters; a longer one in a file is cut.
    static let maximumNameCharacters = 64

    /// The list bundled with the server alone.
    package static let bundled: PasskeyProviders = {
        do { return PasskeyProviders(names: try names(in: Data(PackageResources.PasskeyProviders_json), source: "PasskeyProviders.json")) } catch {
            preconditionFailure("the bundled PasskeyProviders.json: \(error)")
        }
    }()

    private init(names: [String: String]) { self.names = names }

    /// The bundled list, with `file`'s entries over it.
    package init(file: String? = nil) throws {
        var names = Self.bundled.names
        if let file {
            let bytes = try ServerConfiguration.readFile(file, setting: "fido2.providerNamesPath")
            names.merge(try Self.names(in: bytes, source: "fido2.providerNamesPath \(file)")) { _, configured in configured }
        }
        self.names = names
    }

    /// The provider's name for `aaguid` (text, as stored with a passkey): the files', else the Metadata Service's
    /// description, else nil.
    package func name(aaguid: String, metadata: MetadataStore?) -> String? {
        let key = aaguid.lowercased()
        if let name = names[key] { return name }
        guard let bytes = AAGUID.bytes(key), bytes != AAGUID.zero, let entry = metadata?.fido2Metadata(aaguid: bytes) else { return nil }
        let description = entry.description.trimmingCharacters(in: .whitespacesAndNewlines)
        return description.isEmpty ? nil : String(description.prefix(Self.maximumNameCharacters))
    }

    /// The names in a file of the community list's format. Members whose key is not an AAGUID (`_source`) are notes;
    /// an entry without a text `name` is refused, so a wrong file stops the start instead of naming nothing.
    static func names(in bytes: Data, source: String) throws -> [String: String] {
        let object: Any
        do { object = try JSONSerialization.jsonObject(with: bytes) } catch {
            throw ServerConfiguration.ConfigurationError.invalid("\(source) is not JSON: \(error.localizedDescription)")
        }
        guard let entries = object as? [String: Any] else {
            throw ServerConfiguration.ConfigurationError.invalid("\(source) is not a JSON object of AAGUIDs")
        }
        var names: [String: String] = [:]
        for (key, value) in entries where AAGUID.bytes(key) != nil {
            guard let entry = value as? [String: Any], let name = entry["name"] as? String, !name.isEmpty else {
                throw ServerConfiguration.ConfigurationError.invalid("\(source): \(key) has no name")
            }
            names[key.lowercased()] = String(name.prefix(maximumNameCharacters))
        }
        return names
    }
}
