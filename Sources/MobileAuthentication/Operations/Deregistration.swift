import Crypto
import Foundation
import NevisProtocol
import UAF

/// Deregistration of the user's authenticators: the server removes the registrations and answers a
/// DeregistrationRequest naming them; the SDK then deletes those keys and local records. Local data is removed
/// only after the server answered, so a failed call changes nothing on the device.
///
/// Our server protects the deregistration endpoint: pass the `AuthorizationProvider` that a prior
/// authentication returned (or a relying-party JWT).
public final class Deregistration: HttpOperation {
    struct Fields: Sendable {
        var username: Username?
        var aaid: String?
        var authorizationProvider: (any AuthorizationProvider)?
        var headers: [String] = []
        var onSuccess: (@Sendable () -> Void)?
        var onError: (@Sendable (OperationError) -> Void)?
    }

    private let core: ClientCore
    private let state = BuilderState(Fields())

    init(core: ClientCore) { self.core = core }

    /// The user whose authenticators are removed; required.
    @discardableResult public func username(_ username: Username) -> Self {
        state.update { $0.username = username }
        return self
    }
    /// Only the authenticator with this AAID; without it, all of the user's authenticators.
    @discardableResult public func aaid(_ aaid: String) -> Self {
        state.update { $0.aaid = aaid }
        return self
    }
    @discardableResult public func authorizationProvider(_ provider: any AuthorizationProvider) -> Self {
        state.update { $0.authorizationProvider = provider }
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
    @discardableResult public func onError(_ callback: @escaping @Sendable (OperationError) -> Void) -> Self {
        state.update { $0.onError = callback }
        return self
    }

    public func execute() {
        let fields = state.value
        deliver(
            on: core.callbacks, { () async throws(OperationError) in try await self.executeAsync() }, onSuccess: fields.onSuccess,
            onError: fields.onError)
    }

    /// Our deregistration context (the server's wire contract): `username`, and at most one of `aaid` or `keyIDs`
    /// (base64url) as a list; without either, every authenticator of the user.
    struct Context: Encodable {
        var username: String
        var aaid: [String]? = nil
        var keyIDs: [String]? = nil
    }

    public func executeAsync() async throws(OperationError) {
        let fields = state.value
        guard let username = fields.username, !username.isEmpty else { throw .Unknown(cause: SDKMessage("username is required")) }
        try core.checkIntegrity()
        let data = core.mirror.snapshot
        guard data.registrations.contains(where: { $0.isOf(username, aaid: fields.aaid) }) else {
            throw .UserNotRegisteredInServer(cause: SDKMessage("\(username) has no matching authenticator on this device"))
        }
        let context: String
        do { context = try UAFMessageCodec.encodeObject(Context(username: username, aaid: fields.aaid.map { [$0] })) } catch {
            throw .Unknown(cause: error)
        }
        let server = data.accounts.first { $0.username == username }?.server ?? Server(baseUrl: core.configuration.baseUrl)
        let headers = fields.headers.headerPairs + (fields.authorizationProvider?.httpHeaders ?? [])
        let signer = fields.authorizationProvider is JwsAuthorizationProvider ? try await deviceSigner(username: username, server: server) : nil
        let runner = OperationRunner(core: core, objects: InteractionObjects(), headers: headers)
        let message = try await runner.fetchUAFRequest(
            server: server, path: core.configuration.deregistrationRequestPath, op: .deregistration,
            context: context, signer: signer)
        do { try await LocalRemoval(core: core).apply(deregistration: message, username: username, server: server) } catch let error as OperationError
        {
            throw error
        } catch { throw .Unknown(cause: error) }
    }

    /// The `Device-Signature` of a `JwsAuthorizationProvider`: signed as the user's dispatch target there, naming
    /// the request it goes with.
    private func deviceSigner(username: Username, server: Server) async throws(OperationError) -> OperationRunner.RequestSigner {
        guard let target = core.mirror.snapshot.dispatchTargets.first(where: { $0.server == server && $0.username == username }) else {
            throw .Unknown(
                cause: SDKMessage("JwsAuthorizationProvider needs the device's dispatch target for \(username) on \(server.baseUrl.absoluteString)"))
        }
        let key: P256.Signing.PrivateKey
        do {
            guard let keys = try await core.deviceKeys() else { throw SDKMessage("the device has no device keys") }
            key = try keys.signingKey()
        } catch { throw .Unknown(cause: error) }
        let platform = core.platform
        return { request in
            let claims = request.deviceSignatureClaims(dispatchTargetId: target.id, now: platform.now())
            return (DeviceSignature.headerName, try DeviceSignature.sign(claims, dispatchTargetId: target.id, key: key))
        }
    }
}

/// Removes registrations from the device in one commit: their keys, their records, the PIN or password verifier
/// no registration needs any more, accounts without registrations, and the device information with the last one
/// (seed 003, "Device Information").
struct LocalRemoval {
    let core: ClientCore

    /// Removes what a DeregistrationRequest names for `username` on `server` (uaf-spec §1.4: an empty AAID means
    /// every registration for this appID, an empty KeyID every key of the AAID); returns what was removed.
    @discardableResult
    func apply(deregistration message: String, username: Username?, server: Server) async throws -> [LocalRegistration] {
        let requests: [DeregistrationRequest]
        do { requests = try UAFMessageCodec.decode(DeregistrationRequest.self, from: message) } catch {
            throw OperationError.FidoError(errorCode: .protocolError, cause: error)
        }
        // Without a username (out of band, where the request names none) only fully named keys are removed, so a
        // wildcard entry cannot reach another account of the device.
        let named = requests.flatMap(\.authenticators).filter { username != nil || (!$0.aaid.isEmpty && !$0.keyID.isEmpty) }
        let removed = core.mirror.snapshot.registrations.filter { registration in
            registration.server == server && (username == nil || registration.username == username)
                && named.contains { entry in
                    entry.aaid.isEmpty || (AAID.equal(entry.aaid, registration.aaid) && (entry.keyID.isEmpty || entry.keyID == registration.keyID))
                }
        }
        try await remove(removed)
        return removed
    }

    func remove(_ removed: [LocalRegistration]) async throws {
        guard !removed.isEmpty else { return }
        // A registration is named by its key alias: its record may have changed since (a counter advanced).
        let aliases = Set(removed.map(\.keyAlias))
        let remaining = core.mirror.snapshot.registrations.filter { !aliases.contains($0.keyAlias) }
        var changes = StateChanges()
        for registration in removed {
            changes.remove(KeyStore.entry(registration.keyAlias))
            if let kind = core.module(registration.aaid)?.descriptor.kind, kind.isKnowledgeFactor,
                !remaining.contains(where: { $0.username == registration.username && AAID.equal($0.aaid, registration.aaid) })
            {
                changes.remove(core.knowledgeStore(kind == .pin ? .pin : .password).entry(registration.username))
            }
        }
        // The device information (and its keys) goes with the last authenticator (sdk-api.md, DeviceInformation).
        if remaining.isEmpty { changes.remove(DeviceKeys.entry) }
        // The secrets to remove are decided above (a commit takes them up front); the records are removed from the
        // state as it is when the commit runs, so what another commit changed meanwhile stays.
        try await core.commit(changes) { state in
            state.registrations.removeAll { aliases.contains($0.keyAlias) }
            let remaining = state.registrations
            state.accounts.removeAll { account in !remaining.contains { $0.username == account.username && $0.server == account.server } }
            state.dispatchTargets.removeAll { target in !remaining.contains { $0.username == target.username && $0.server == target.server } }
            if remaining.isEmpty { state.deviceInformation = nil }
        }
        // Hardware keys go once their records are gone: a failed commit keeps both, so the device stays consistent.
        for registration in removed { core.platform.hardwareKeyStore?.deleteKey(tag: registration.keyAlias) }
    }
}
