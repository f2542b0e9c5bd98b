import Foundation
import JWTKit

/// Why a JWT was refused, in words an operator reads in the audit trail and a caller in its 401. JWTKit's own text
/// reads `JWTKitError(errorType: malformedToken, reason: "Couldn't decode JWT payload with error:
/// DecodingError.keyNotFound: … CodingKeys(stringValue: "auth_time", intValue: nil) …")`.
enum TokenRefusal {
    static func reason(_ error: any Error) -> String {
        guard let error = error as? JWTError else {
            if let decoding = error as? DecodingError { return claimsReason(decoding) }
            return "it cannot be verified"
        }
        switch error.errorType {
        case .malformedToken:
            // A payload that parsed but lacks or mistypes a claim names the claim; anything else is not a JWT.
            if let reason = error.reason, let claim = reason.firstMatch(of: /Key '([^']+)' not found/)?.1 {
                return "its claim \(claim) is missing"
            }
            if let reason = error.reason, reason.contains("payload") { return "its claims are not a JSON object of the expected shape" }
            return "it is not a compact JWT (three base64url parts, a JSON header and claims)"
        case .signatureVerificationFailed: return "its signature does not verify with a trusted key"
        case .missingKIDHeader, .unknownKID: return "it is signed with a key this server does not trust"
        case .unsupportedAlgorithm, .signingAlgorithmFailure: return "its algorithm is not one this server accepts"
        case .claimVerificationFailure: return "a claim does not hold" + (error.reason.map { ": \($0)" } ?? "")
        case .invalidHeaderField: return "its header is not acceptable" + (error.reason.map { ": \($0)" } ?? "")
        default: return "it cannot be verified (\(error.errorType))"
        }
    }

    private static func claimsReason(_ error: DecodingError) -> String {
        switch error {
        case .keyNotFound(let key, _): return "its claim \(key.stringValue) is missing"
        case .typeMismatch(_, let context), .valueNotFound(_, let context):
            return "its claim \(context.codingPath.map(\.stringValue).joined(separator: ".")) has the wrong type"
        default: return "its claims are not a JSON object of the expected shape"
        }
    }
}
