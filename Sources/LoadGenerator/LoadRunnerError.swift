import Foundation

public enum LoadRunnerError: Error, CustomStringConvertible {
    /// The first failure's key, and what the person running `mauth load` can do about it.
    case setupFailed(String, hint: String? = nil)
    public var description: String {
        switch self {
        case .setupFailed(let detail, let hint): "no user of the population could be registered: \(detail)" + (hint.map { ". \($0)" } ?? "")
        }
    }

    /// What to do about the first failure of a setup that registered nobody, in the command line's terms.
    static func hint(_ failure: String, plan: LoadPlan) -> String? {
        if failure.contains(LoadHTTP.untrusted) {
            return "Trust the server's certificate with --ca-file FILE (mauth server --write-certificate FILE writes a development one)"
        }
        if failure.contains(LoadHTTP.refused) { return "Is the server running, at the --url given?" }
        if failure.hasPrefix("HTTP 401 ") || failure.hasPrefix("HTTP 403 ") {
            guard plan.relyingParty != nil else {
                return "Registrations need the relying party's JWT: pass --relying-party-key KEY.pem, the private key whose public key the "
                    + "server's authorization.jwt trusts (with --issuer and --audience as it expects), or run the server in development mode"
            }
            return "The server refused the JWTs signed with --relying-party-key: its authorization.jwt must trust that key's public key "
                + "and expect the --issuer and --audience given"
        }
        if failure.contains("origin \""), failure.contains("is not allowed") {
            return "The server does not accept the virtual passkeys' origin (\(plan.passkeyOrigin)): pass --passkey-origin with one of "
                + "its fido2.origins (https://<rpId>, with the port if a page's origin has one)"
        }
        if failure.hasPrefix("HTTP 429 ") {
            return "The server rate-limits this address: set limits.requestsPerMinutePerAddress to 0 on the server for a load test"
        }
        return nil
    }
}
