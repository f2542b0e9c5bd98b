import Foundation
import UAF

extension OperationRunner {
    /// What the device tells the server when its part of an operation fails after the server issued the UAF request
    /// (our contract for the Nevis extension of server-api §B.3): the operation's SendUAFResponse with no assertions,
    /// its `context` a JSON object with the client error code and, where one exists, the ASM status code. The server
    /// ends the operation as `failed` with them at once, instead of leaving it pending until the request expires.
    struct FailureReport: Codable, Equatable, Sendable {
        var clientErrorCode: Int
        var asmStatusCode: Int?

        init(clientErrorCode: Int, asmStatusCode: Int?) {
            self.clientErrorCode = clientErrorCode
            self.asmStatusCode = asmStatusCode
        }

        /// The report of `error`, or nil for a failure the server must not hear of from this device: it could not be
        /// reached, or it is not trusted (an untrusted facet, an insecure connection, a message that breaks the
        /// protocol or whose version the device does not speak).
        init?(_ error: OperationError) {
            switch error {
            case .NetworkError, .ClockSkewTooBig, .OperationNotSupportedByBackend: return nil
            case .FidoError(let code, _):
                switch code {
                case .noError, .waitUserAction, .insecureTransport, .protocolError, .unsupportedVersion, .untrustedFacetID: return nil
                default: clientErrorCode = code.rawValue
                }
            default: clientErrorCode = FidoErrorCode.unknown.rawValue
            }
            asmStatusCode = FidoErrorCode(rawValue: clientErrorCode).flatMap(Self.asmStatusCode)
        }

        /// The ASM status code (uaf-spec §1.8) with the same meaning as a client error code, where there is one.
        static func asmStatusCode(_ code: FidoErrorCode) -> Int? {
            switch code {
            case .userCanceled: 0x03
            case .invalidTransactionContent: 0x04
            case .keyDisappearedPermanently: 0x09
            case .authenticatorAccessDenied: 0x02
            case .userNotResponsive: 0x0E
            case .insufficientAuthenticatorResources: 0x0F
            case .userLockout: 0x10
            case .userNotEnrolled: 0x11
            default: nil
            }
        }
    }

    /// Runs the device's part of an operation whose request `header` and `challenge` the server issued. If it fails,
    /// the server hears of it (``FailureReport``, posted to `path` on `server` as an `emptyResponse` with the final
    /// challenge parameters) before the error is rethrown unchanged. The report is best effort and never retried:
    /// when it cannot be sent, the server ends the operation when its request expires.
    func reportingFailure<Response: Encodable, T>(
        header: OperationHeader, challenge: String, server: Server, path: String,
        emptyResponse: (OperationHeader, String) -> Response,
        _ body: () async throws(OperationError) -> T
    ) async throws(OperationError) -> T {
        do throws(OperationError) {
            return try await body()
        } catch {
            if let report = FailureReport(error) {
                var header = header
                if header.appID?.isEmpty ?? true { header.appID = core.facetID }
                if let fcParams = try? finalChallenge(appID: header.appID ?? core.facetID, challenge: challenge),
                    let context = try? UAFMessageCodec.encodeObject(report)
                {
                    // The server refuses a response without assertions; the error below is what the app gets.
                    _ = try? await sendUAFResponse(server: server, path: path, response: emptyResponse(header, fcParams), context: context)
                }
            }
            throw error
        }
    }
}
