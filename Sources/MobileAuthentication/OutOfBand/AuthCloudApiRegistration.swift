import Foundation
import NevisProtocol
import WireJSON

/// Registration from an Authentication Cloud enroll: the relying party's backend called `POST /api/v1/users/enroll`
/// and handed the app either the whole answer (``enrollResponse(_:)``) or its `enrollment.appLinkUri`
/// (``appLinkUri(_:)``), exactly one of them. The link carries the out-of-band payload (`dispatchTokenResponse`); the
/// SDK decodes it, redeems its token and registers the user the enrollment names.
public final class AuthCloudApiRegistration: RegistrationCeremonyBuilder, HttpOperation, @unchecked Sendable {
    // @unchecked Sendable: restated from the builder base class; every stored property is a `let` of a Sendable type.
    struct Fields: Sendable {
        var enrollResponse: String?
        var appLinkUri: String?
        var headers: [String] = []
        var onSuccess: (@Sendable () -> Void)?
        var onError: (@Sendable (AuthCloudApiError) -> Void)?
    }

    private let core: ClientCore
    private let state = BuilderState(Fields())
    init(core: ClientCore) {
        self.core = core
        super.init()
    }

    /// The JSON answer of the enroll call (it contains `enrollment.appLinkUri`).
    @discardableResult public func enrollResponse(_ json: String) -> Self {
        state.update { $0.enrollResponse = json }
        return self
    }
    /// The enroll answer's `appLinkUri` (`https://…/open?dispatchTokenResponse=…`).
    @discardableResult public func appLinkUri(_ uri: String) -> Self {
        state.update { $0.appLinkUri = uri }
        return self
    }
    @discardableResult public func requestHeaders(_ headers: RequestHeaders) -> Self {
        state.update { $0.headers = headers }
        return self
    }
    @discardableResult public func onSuccess(_ callback: @escaping @Sendable () -> Void) -> Self {
        state.update { $0.onSuccess = callback }
        return self
    }
    @discardableResult public func onError(_ callback: @escaping @Sendable (AuthCloudApiError) -> Void) -> Self {
        state.update { $0.onError = callback }
        return self
    }

    public func execute() {
        let fields = state.value
        deliver(
            on: core.callbacks, { () async throws(AuthCloudApiError) in try await self.executeAsync() }, onSuccess: fields.onSuccess,
            onError: fields.onError)
    }

    public func executeAsync() async throws(AuthCloudApiError) {
        let fields = state.value
        let link = try Self.appLink(enrollResponse: fields.enrollResponse, appLinkUri: fields.appLinkUri)
        let payload: OutOfBandPayload
        do { payload = try await OutOfBandPayloadDecode(core: core).base64UrlEncoded(link).executeAsync() } catch {
            switch error {
            case .DecryptionError(let cause): throw .DecryptionError(cause: cause)
            case .DeviceProtectionError(let cause): throw .DeviceProtectionError(cause: cause)
            case .MalformedPayload(let cause): throw .MalformedPayload(cause: cause)
            case .NoDeviceLockError(let cause): throw .NoDeviceLockError(cause: cause)
            case .Unknown(let cause): throw .Unknown(cause: cause)
            }
        }
        let redeemed: OutOfBandOperation.Redeemed
        do { redeemed = try await OutOfBandOperation(core: core).payload(payload).requestHeaders(fields.headers).executeAsync() } catch {
            switch error {
            case .DeviceProtectionError(let cause): throw .DeviceProtectionError(cause: cause)
            case .NetworkError(let cause): throw .NetworkError(cause: cause)
            case .NoDeviceLockError(let cause): throw .NoDeviceLockError(cause: cause)
            case .TokenAlreadyRedeemed(let cause): throw .TokenAlreadyRedeemed(cause: cause)
            case .TokenExpired(let cause): throw .TokenExpired(cause: cause)
            case .Unknown(let cause): throw .Unknown(cause: cause)
            }
        }
        guard case .registration(let registration) = redeemed else {
            throw .MalformedPayload(cause: SDKMessage("the link stands for another operation than a registration"))
        }
        do {
            try await register(
                .redeemed(message: registration.message), core: core, headers: fields.headers.headerPairs,
                server: registration.server)
        } catch {
            switch error {
            case .FidoError(let code, let cause): throw .FidoError(errorCode: code, cause: cause)
            case .NetworkError(let cause): throw .NetworkError(cause: cause)
            case .DeviceProtectionError(let cause): throw .DeviceProtectionError(cause: cause)
            case .NoDeviceLockError(let cause): throw .NoDeviceLockError(cause: cause)
            case .UserAlreadyRegisteredInAnotherServer(let cause): throw .UserAlreadyRegisteredInAnotherServer(cause: cause)
            default: throw .Unknown(cause: error)
            }
        }
    }

    /// The app link the input stands for. Exactly one of the two must be given, and not empty (sdk-api.md (b)): both
    /// or neither is a mistake of the app (`Unknown`); an empty or unreadable one is `MalformedPayload`.
    static func appLink(enrollResponse: String?, appLinkUri: String?) throws(AuthCloudApiError) -> String {
        switch (enrollResponse, appLinkUri) {
        case (let json?, nil):
            guard !json.isEmpty else { throw .MalformedPayload(cause: SDKMessage("enrollResponse is empty")) }
            struct EnrollResponse: Decodable {
                struct Enrollment: Decodable { var appLinkUri: String }
                var enrollment: Enrollment
            }
            guard json.utf8.count <= 1 << 20, let response = try? WireJSONDecoder().decode(EnrollResponse.self, from: Data(json.utf8)),
                !response.enrollment.appLinkUri.isEmpty
            else {
                throw .MalformedPayload(cause: SDKMessage("enrollResponse is not an enroll answer with enrollment.appLinkUri"))
            }
            return response.enrollment.appLinkUri
        case (nil, let uri?):
            guard !uri.isEmpty else { throw .MalformedPayload(cause: SDKMessage("appLinkUri is empty")) }
            return uri
        case (nil, nil):
            throw .Unknown(cause: SDKMessage("give enrollResponse(_:) or appLinkUri(_:)"))
        case (_?, _?):
            throw .Unknown(cause: SDKMessage("give only one of enrollResponse(_:) and appLinkUri(_:)"))
        }
    }
}
