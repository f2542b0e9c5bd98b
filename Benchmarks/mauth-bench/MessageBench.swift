import Foundation
import Primitives
import UAF
import UAFTesting

/// `mauth-bench messages`: the JSON work of one authentication flow, message by message, as the server and a client do
/// it (one core, medians). The request's policy is the one the server sends: every authenticator of the default
/// metadata (an unnamed user), or the user's own key (step-up, what `mauth load` asks).
enum MessageBench {
    static func run() async throws {
        print("UAF message JSON (median of 20000)")
        let appID = "https://bench.example/nevisfido/uaf/1.1/facets"
        let wide = Policy(accepted: DefaultMetadata.statements.map { [MatchCriteria(aaid: [$0.aaid], authenticationAlgorithms: [$0.authenticationAlgorithm])] })
        var authenticator = SoftwareAuthenticator()
        let stepUp = Policy(accepted: [[MatchCriteria(aaid: [authenticator.aaid], keyIDs: [Base64URL.encode(authenticator.keyID)])]])
        for (name, policy) in [("metadata-wide policy (\(wide.accepted.count) authenticators)", wide), ("step-up policy (1 key)", stepUp)] {
            let request = AuthenticationRequest(header: OperationHeader(op: .authentication, appID: appID, serverData: Base64URL.encode(SecureRandom.bytes(18))),
                                                challenge: Base64URL.encode(SecureRandom.bytes(32)), policy: policy)
            let text = try UAFMessageCodec.encode([request])
            Measure.report("encode AuthenticationRequest, \(name)", try each { _ = try UAFMessageCodec.encode([request]) })
            Measure.report("decode AuthenticationRequest, \(name)", try each { _ = try UAFMessageCodec.decode(AuthenticationRequest.self, from: text) })
            Measure.report("WIRE encode AuthenticationRequest, \(name)", try each { _ = try WireJSONEncoder().encode([request]) })
            Measure.report("WIRE decode AuthenticationRequest, \(name)", try each { _ = try WireJSONDecoder().decode([AuthenticationRequest].self, from: text) })
            let wireText = try WireJSONEncoder().encodeToString([request]); precondition(wireText == text)
            let wireDecoded = try WireJSONDecoder().decode([AuthenticationRequest].self, from: text); precondition(wireDecoded == [request])
        }
        let request = AuthenticationRequest(header: OperationHeader(op: .authentication, appID: appID, serverData: Base64URL.encode(SecureRandom.bytes(18))),
                                            challenge: Base64URL.encode(SecureRandom.bytes(32)), policy: stepUp)
        let response = try authenticator.authenticate(request, serverAppID: appID)
        let body = try JSONEncoder().encode(SendUAFResponse(uafResponse: try UAFMessageCodec.encode([response])))
        Measure.report("encode SendUAFResponse (authentication)", try each {
            _ = try JSONEncoder().encode(SendUAFResponse(uafResponse: try UAFMessageCodec.encode([response])))
        })
        Measure.report("decode SendUAFResponse (authentication)", try each {
            let send = try JSONDecoder().decode(SendUAFResponse.self, from: body)
            _ = try UAFMessageCodec.decode(AuthenticationResponse.self, from: send.uafResponse)
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
