import Foundation
import NevisProtocol
import UAF

/// An out-of-band operation dispatched to this device that is neither redeemed nor expired (server-api §D.3).
public struct PendingOutOfBandOperation: Sendable {
    public let creationTime: Date
    /// `firebase-cloud-messaging`, `png-qr-code`, `link` or `link-png-qr-code`.
    public let dispatcherName: String
    /// Decrypted: hand it to `outOfBandOperation.payload(_:)`.
    public let payload: OutOfBandPayload
    /// The dispatch request's `dispatchInformation` JSON (for push, the notification), if any.
    public let dispatchInformation: String?
    public let server: Server
    /// What the server says the operation is for, so that a list can show it before the operation is opened (this
    /// SDK's addition; nil from a server that does not say): the user it was dispatched for and the transaction
    /// text it asks to confirm, as dispatched. The text the user confirms is the one the operation itself shows to
    /// the verifier, after the payload is redeemed.
    public let username: String?
    public let transactionText: String?
    /// Whether it is a registration, an authentication or a deregistration, if the server says.
    public let operationKind: OutOfBandOperationKind?
}

/// The kinds of out-of-band operation a pending operation can stand for.
public enum OutOfBandOperationKind: String, Sendable {
    case registration = "Reg", authentication = "Auth", deregistration = "Dereg"
}

public struct PendingOutOfBandOperationsResult: Sendable {
    /// Oldest first, newest last.
    public let operations: [PendingOutOfBandOperation]
    /// One per server that could not be asked (the others' operations are still returned).
    public let errors: [PendingOutOfBandOperationsError]
}

/// Fetches the pending out-of-band operations of this device from every server it has a dispatch target on (the
/// "fetch channel" for pushes that never arrived). Call it when the app starts or returns to the foreground, not in
/// a loop: every call is a signed request the server checks.
public final class PendingOutOfBandOperations: HttpOperation {
    struct Fields: Sendable {
        var headers: [String] = []
        var onResult: (@Sendable (PendingOutOfBandOperationsResult) -> Void)?
    }
    private let core: ClientCore
    private let state = BuilderState(Fields())
    init(core: ClientCore) { self.core = core }

    @discardableResult public func requestHeaders(_ headers: RequestHeaders) -> Self {
        state.update { $0.headers = headers }
        return self
    }
    @discardableResult public func onResult(_ callback: @escaping @Sendable (PendingOutOfBandOperationsResult) -> Void) -> Self {
        state.update { $0.onResult = callback }
        return self
    }

    public func execute() {
        deliver(on: core.callbacks, { await self.executeAsync() }, onResult: state.value.onResult)
    }

    public func executeAsync() async -> PendingOutOfBandOperationsResult {
        do {
            try core.checkIntegrity(
                deviceProtection: { PendingOutOfBandOperationsError.DeviceProtectionError(cause: $0) },
                noDeviceLock: PendingOutOfBandOperationsError.NoDeviceLockError(cause: nil))
        } catch { return PendingOutOfBandOperationsResult(operations: [], errors: [error]) }
        let data = core.mirror.snapshot
        guard let deviceId = data.deviceInformation?.deviceId else { return PendingOutOfBandOperationsResult(operations: [], errors: []) }
        let client = DeviceServiceClient(core: core, headers: state.value.headers.headerPairs, retryPolicy: core.configuration.defaultRetryPolicy)
        var operations: [PendingOutOfBandOperation] = []
        var errors: [PendingOutOfBandOperationsError] = []
        for (server, targets) in client.servers(in: data) {
            switch await client.get(
                DeviceServiceWire.PendingOperations.self, DeviceServiceWire.operationsComponent, server: server,
                signers: targets.map(\.id), deviceId: deviceId)
            {
            case .failure(let failure): errors.append(.init(failure))
            case .success(let answer):
                for operation in answer.operations {
                    // An entry that does not decrypt with this device's key is reported, never silently dropped.
                    do {
                        let payload = try await core.open(try DispatchPayload.parse(json: operation.payload))
                        operations.append(
                            PendingOutOfBandOperation(
                                creationTime: Date(timeIntervalSince1970: TimeInterval(operation.creationTimeInEpochMillis) / 1000),
                                dispatcherName: operation.dispatcher, payload: payload, dispatchInformation: operation.dispatchInformation,
                                server: server,
                                username: operation.username, transactionText: operation.transactionText,
                                operationKind: operation.operation.flatMap(OutOfBandOperationKind.init(rawValue:))))
                    } catch {
                        errors.append(.Unknown(cause: client.failure(.other, server, 200, "a pending operation cannot be opened: \(error)")))
                    }
                }
            }
        }
        operations.sort { $0.creationTime < $1.creationTime }
        return PendingOutOfBandOperationsResult(operations: operations, errors: errors)
    }
}
