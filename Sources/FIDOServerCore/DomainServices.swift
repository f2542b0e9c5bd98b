import Foundation
import UAF

/// The server's services, wired once from its configuration and shared resources: what the HTTP layer routes
/// requests to. The domain builds its own parts, so their initializers stay internal to it.
package struct DomainServices: Sendable {
    package let environment: ServiceEnvironment
    package let signatures: DeviceSignatureVerifier
    package let registration: RegistrationService
    package let authentication: AuthenticationService
    package let deregistration: DeregistrationService
    package let targets: DispatchTargetService
    package let dispatch: DispatchService
    package let devices: DeviceService
    package let authCloud: AuthCloudService
    package let status: StatusService
    package let admin: AdminService
    /// Passkeys (nevisFIDO's FIDO2 API), when `fido2` is configured.
    package let passkeys: PasskeyService?

    /// `onDecision` hears every decision a service takes (the HTTP layer logs it with the request's id and counts it).
    package init(
        configuration: ServerConfiguration, stores: Stores, metadata: MetadataSource, facets: TrustedFacetsSource,
        identity: AppIdentity, issuer: TokenIssuer, channelBinding: ServerCertificateSource?,
        firebase: FirebaseDispatcher?, passkeys: PasskeySettings? = nil, appAttestation: AppAttestationSettings,
        clock: @escaping @Sendable () -> Date,
        onDecision: @escaping @Sendable (ServerDecision) -> Void
    ) {
        environment = ServiceEnvironment(
            identity: identity, limits: configuration.limits,
            signIn: SignIn(issuer: issuer, tokens: configuration.tokens, sessions: stores.sessions, clock: clock), clock: clock,
            onDecision: onDecision)
        let uaf = UAFExchange(
            environment: environment, stores: .init(stores), facets: facets, metadataSource: metadata,
            counterPolicy: configuration.rejectCounterRegression ? .reject : .ignore,
            zeroCounters: configuration.zeroCounterAAIDs.map { .onlyFor(Set($0)) } ?? .any, versions: configuration.protocolVersions,
            policies: PolicyChoice(named: configuration.policies), channelBinding: channelBinding,
            requestLifetime: TimeInterval(configuration.requestLifetimeSeconds))
        signatures = DeviceSignatureVerifier(
            stores: .init(stores), skew: TimeInterval(configuration.dispatch.deviceSignatureSkewSeconds),
            acceptUnbound: configuration.dispatch.acceptUnboundDeviceSignatures, clock: clock)
        let appAttestation = AppAttestationGate(environment: environment, stores: .init(stores), settings: appAttestation)
        registration = RegistrationService(environment: environment, uaf: uaf, appAttestation: appAttestation, stores: .init(stores))
        authentication = AuthenticationService(environment: environment, uaf: uaf, appAttestation: appAttestation, stores: .init(stores))
        deregistration = DeregistrationService(environment: environment, uaf: uaf, stores: .init(stores))
        targets = DispatchTargetService(environment: environment, stores: .init(stores), signatures: signatures)
        let limits = configuration.limits
        let qr = QRRenderer(
            moduleSize: configuration.dispatch.qrModuleSize,
            limits: .init(
                atOnce: limits.qrRenderingsAtOnce == 0 ? QRRenderer.defaultAtOnce : limits.qrRenderingsAtOnce,
                waiting: limits.qrRenderingsWaiting))
        dispatch = DispatchService(
            environment: environment, uaf: uaf, stores: .init(stores), registration: registration, authentication: authentication,
            deregistration: deregistration, configuration: configuration.dispatch, firebase: firebase, qr: qr)
        devices = DeviceService(environment: environment, stores: .init(stores), signatures: signatures, targets: targets)
        status = StatusService(environment: environment, uaf: uaf, stores: .init(stores))
        let environment = environment
        let passkeyService = passkeys.map {
            PasskeyService(environment: environment, settings: $0, metadataSource: metadata, stores: .init(stores))
        }
        self.passkeys = passkeyService
        authCloud = AuthCloudService(
            environment: environment, uaf: uaf, passkeys: passkeyService, stores: .init(stores), dispatch: dispatch, statusService: status,
            issuer: issuer, configuration: configuration.dispatch)
        admin = AdminService(stores: stores, clock: clock, providers: passkeys?.providers ?? .bundled, onDecision: onDecision)
    }
}
