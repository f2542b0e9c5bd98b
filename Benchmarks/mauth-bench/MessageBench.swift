import Foundation
import NevisProtocol
import Primitives
import UAF
import UAFSimulation
import UAFTesting
import WireJSON

/// `mauth-bench messages`: the JSON work of one authentication flow, message by message, as the server and a client do
/// it (one core, medians), with the wire codec (`WireJSONEncoder`/`WireJSONDecoder`, what `UAFMessageCodec`, the
/// server's UAF bodies and the load tool use) and with Foundation's `JSONEncoder`/`JSONDecoder` beside it. The
/// request's policy is the one the server sends: every authenticator of the default metadata (an unnamed user), or
/// the user's own key (step-up, what `mauth load` asks).
enum MessageBench {
    static func run() async throws {
        print("UAF message JSON (median of 20000): wire codec, then Foundation")
        let appID = "https://bench.example/nevisfido/uaf/1.1/facets"
        let wide = Policy(accepted: NevisAuthenticatorMetadata.statements.map { [MatchCriteria(aaid: [$0.aaid], authenticationAlgorithms: [$0.authenticationAlgorithm])] })
        var authenticator = SoftwareAuthenticator()
        let stepUp = Policy(accepted: [[MatchCriteria(aaid: [authenticator.aaid], keyIDs: [Base64URL.encode(authenticator.keyID)])]])
        let foundation = foundationWireEncoder()
        for (name, policy) in [("metadata-wide policy (\(wide.accepted.count) authenticators)", wide), ("step-up policy (1 key)", stepUp)] {
            let request = AuthenticationRequest(header: OperationHeader(op: .authentication, appID: appID, serverData: Base64URL.encode(SecureRandom.bytes(18))),
                                                challenge: Base64URL.encode(SecureRandom.bytes(32)), policy: policy)
            let text = try UAFMessageCodec.encode([request])
            Measure.report("encode AuthenticationRequest, \(name)", try each { _ = try UAFMessageCodec.encode([request]) })
            Measure.report("  Foundation", try each { _ = try foundation.encode([request]) })
            Measure.report("decode AuthenticationRequest, \(name)", try each { _ = try UAFMessageCodec.decode(AuthenticationRequest.self, from: text) })
            Measure.report("  Foundation", try each { _ = try JSONDecoder().decode([AuthenticationRequest].self, from: Data(text.utf8)) })
        }
        let request = AuthenticationRequest(header: OperationHeader(op: .authentication, appID: appID, serverData: Base64URL.encode(SecureRandom.bytes(18))),
                                            challenge: Base64URL.encode(SecureRandom.bytes(32)), policy: stepUp)
        let response = try authenticator.authenticate(request, serverAppID: appID)
        let body = try WireJSONEncoder().encode(SendUAFResponse(uafResponse: try UAFMessageCodec.encode([response])))
        Measure.report("encode SendUAFResponse (authentication)", try each {
            _ = try WireJSONEncoder().encode(SendUAFResponse(uafResponse: try UAFMessageCodec.encode([response])))
        })
        Measure.report("  Foundation", try each {
            _ = try foundation.encode(SendUAFResponse(uafResponse: String(decoding: try foundation.encode([response]), as: UTF8.self)))
        })
        Measure.report("decode SendUAFResponse (authentication)", try each {
            let send = try WireJSONDecoder().decode(SendUAFResponse.self, from: body)
            _ = try UAFMessageCodec.decode(AuthenticationResponse.self, from: send.uafResponse)
        })
        Measure.report("  Foundation", try each {
            let send = try JSONDecoder().decode(SendUAFResponse.self, from: Data(body))
            _ = try JSONDecoder().decode([AuthenticationResponse].self, from: Data(send.uafResponse.utf8))
        })
    }

    private static func each(_ body: () throws -> Void) throws -> Double {
        for _ in 0..<2000 { try body() }
        var samples: [Double] = []
        samples.reserveCapacity(20000)
        let clock = ContinuousClock()
        for _ in 0..<20000 {
            let start = clock.now
            try body()
            let elapsed = clock.now - start
            samples.append(Double(elapsed.components.seconds) * 1e9 + Double(elapsed.components.attoseconds) / 1e9)
        }
        return Measure.median(samples)
    }
}
