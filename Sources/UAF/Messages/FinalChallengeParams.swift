import Crypto
import Foundation
import Primitives
import WireJSON

/// ChannelBinding (uaf-spec §1.6; RFC 5929).
public struct ChannelBinding: Codable, Hashable, Sendable {
    public var serverEndPoint: String?
    public var tlsServerCertificate: String?
    public var tlsUnique: String?
    public var cidPubkey: String?

    public init(serverEndPoint: String? = nil, tlsServerCertificate: String? = nil, tlsUnique: String? = nil, cidPubkey: String? = nil) {
        self.serverEndPoint = serverEndPoint
        self.tlsServerCertificate = tlsServerCertificate
        self.tlsUnique = tlsUnique
        self.cidPubkey = cidPubkey
    }

    enum CodingKeys: String, CodingKey { case serverEndPoint, tlsServerCertificate, tlsUnique, cidPubkey = "cid_pubkey" }
}

/// FinalChallengeParams (uaf-spec §1.6).
public struct FinalChallengeParams: Codable, Hashable, Sendable {
    public var appID: String
    public var challenge: String
    public var facetID: String
    public var channelBinding: ChannelBinding

    public init(appID: String, challenge: String, facetID: String, channelBinding: ChannelBinding = ChannelBinding()) {
        self.appID = appID
        self.challenge = challenge
        self.facetID = facetID
        self.channelBinding = channelBinding
    }

    /// `fcParams = base64url(UTF-8(JSON(FinalChallengeParams)))`.
    public func encodedFCParams() throws -> String {
        Base64URL.encode(try WireJSONEncoder().encode(self))
    }

    /// Decodes an fcParams string; nil if it is not base64url of strict JSON of this shape.
    public static func decode(fcParams: String) -> FinalChallengeParams? {
        guard let json = Base64URL.decodeBytes(fcParams) else { return nil }
        return decode(json: json)
    }

    /// The params in `json`, read by the wire's one JSON reader (`WireJSONDecoder`: strict RFC 8259, no member named
    /// twice, unknown members skipped); nil for anything else.
    static func decode(json: [UInt8]) -> FinalChallengeParams? {
        try? WireJSONDecoder().decode(FinalChallengeParams.self, from: json)
    }

    /// FinalChallengeHash = SHA-256 over the ASCII bytes of the fcParams string **as received**, not over the
    /// decoded JSON (uaf-spec §1.6; confirmed on both spec examples).
    public static func hash(fcParams: String) -> [UInt8] {
        Array(SHA256.hash(data: Array(fcParams.utf8)))
    }
}
