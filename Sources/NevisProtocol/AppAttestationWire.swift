import Crypto
import Foundation
import Primitives
import UAF
import WireJSON

/// App attestation on the UAF wire, our contract (Nevis does not publish its own): how a server asks an app to prove
/// it is genuine, and how the app answers, in the UAF messages' header extensions.
///
/// - The request's header carries ``extensionID`` (`fail_if_unknown` false) with `data` the mode: `report` (the
///   server checks, records and audits, and goes on whatever the verdict) or `require` (refused without a valid
///   attestation, UAF status 1497).
/// - The response's header carries ``extensionID`` with `data` the JSON text of an ``Answer``.
/// - The client data the app has App Attest sign is the response's `fcParams` (``clientDataHash(fcParams:)``): they
///   carry the request's one-time challenge, the app ID, the facet and the channel binding, and the FIDO key signs
///   the same hash, so the attestation is this operation's and its challenge is used once, as the request is.
public enum AppAttestationWire {
    public static let extensionID = "ch.nevis.mauth.app-attestation"
    /// The largest `data` a server reads: an App Attest object of 32 KiB in base64url, and its JSON.
    public static let maximumDataBytes = 32 * 1024 * 4 / 3 + 512

    /// What an app answers. On Apple (`platform` `apple`): its App Attest key ID and, the first time it uses the key
    /// with this server, the attestation object; afterwards an assertion. On Android (`android`): a Play Integrity
    /// token from a standard request whose `requestHash` is ``requestHash(fcParams:)``. Binary values are base64url.
    public struct Answer: Codable, Sendable, Equatable {
        /// `apple` (App Attest) or `android` (Play Integrity).
        public var platform: String
        public var keyId: String?
        public var attestation: String?
        public var assertion: String?
        public var playIntegrityToken: String?

        public init(
            platform: String, keyId: String? = nil, attestation: String? = nil, assertion: String? = nil, playIntegrityToken: String? = nil
        ) {
            self.platform = platform
            self.keyId = keyId
            self.attestation = attestation
            self.assertion = assertion
            self.playIntegrityToken = playIntegrityToken
        }

        /// The response header's extension that carries this answer.
        public func headerExtension() throws -> Extension {
            Extension(
                id: AppAttestationWire.extensionID, data: String(decoding: try WireJSONEncoder().encode(self), as: UTF8.self), failIfUnknown: false)
        }
    }

    /// The mode a request's header asks for, or nil when it asks nothing.
    public static func asked(in header: OperationHeader) -> String? {
        header.exts?.first { $0.id == extensionID }?.data
    }

    /// SHA-256 of the response's `fcParams` (UTF-8, as sent): what App Attest signs.
    public static func clientDataHash(fcParams: String) -> [UInt8] { Array(SHA256.hash(data: Array(fcParams.utf8))) }

    /// The `requestHash` an Android app gives Play Integrity's standard request: base64url (no padding) of
    /// ``clientDataHash(fcParams:)``.
    public static func requestHash(fcParams: String) -> String { Base64URL.encode(clientDataHash(fcParams: fcParams)) }
}
