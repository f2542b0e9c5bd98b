import ArgumentParser
import FIDOSimulation
import Foundation
import MobileAuthentication
import MobileAuthenticationCore
import NevisProtocol

/// Where an out-of-band payload comes from: a QR code image, the scanned text, or a pending operation.
struct PayloadOptions: ParsableArguments {
    @Option(help: "A PNG with the QR code to scan (read with zbarimg).") var qrImage: String?
    @Option(help: "The scanned or pushed payload: base64url, JSON, or an app link.") var payload: String?

    /// These options with an app link as the payload (`approve`/`deny --app-link`): it must be one.
    func with(appLink: String?) throws -> PayloadOptions {
        guard let appLink else { return self }
        guard qrImage == nil && payload == nil else { throw DeviceCommandError("give one of --app-link, --qr-image, --payload") }
        guard let url = URL(string: appLink), url.scheme == "https", appLink.contains("\(DispatchPayload.linkParameter)=") else {
            throw DeviceCommandError("--app-link must be an https:// link with a \(DispatchPayload.linkParameter) parameter")
        }
        var copy = self
        copy.payload = appLink
        return copy
    }

    /// The text a camera would read, if a source was given.
    func scannedText() throws -> String? {
        if qrImage != nil && payload != nil { throw DeviceCommandError("give either --qr-image or --payload, not both") }
        if let payload { return payload.trimmingCharacters(in: .whitespacesAndNewlines) }
        guard let qrImage else { return nil }
        let png = try DeviceCommandError.readFile(qrImage)
        guard QRCodeReader.isInstalled else { throw DeviceCommandError("reading a QR image needs zbarimg (Debian: apt-get install zbar-tools)") }
        return try QRCodeReader.read(png: Array(png))
    }
}

/// Runs what a scanned or pushed payload stands for. An app link (`…?dispatchTokenResponse=…`) goes through
/// `AuthCloudApiRegistration`; anything else is decoded as an out-of-band payload and redeemed.
struct OutOfBandRunner {
    let device: HeadlessDevice
    let client: any MobileAuthenticationClient
    let selector: HeadlessSelector
    let answers: HeadlessAnswers

    /// `enrolling`: an app link is an Auth Cloud enrollment, run by `AuthCloudApiRegistration` (as the app
    /// does); otherwise the link is redeemed like any other payload (an approval's QR code is such a link): the
    /// SDK's base64url decoder takes the payload out of a link's `dispatchTokenResponse` itself.
    func run(_ text: String, enrolling: Bool, report: inout DeviceReport) async throws {
        if text.hasPrefix("https://") || text.hasPrefix("http://") {
            guard text.contains("\(DispatchPayload.linkParameter)=") else {
                throw DeviceCommandError("\(text.prefix(60)) is a link but not an app link (no \(DispatchPayload.linkParameter))")
            }
            if enrolling { return try await authCloudRegistration(appLink: text, enrollResponse: nil, report: &report) }
        }
        let decode = client.operations.outOfBandPayloadDecode
        let payload = try await (text.hasPrefix("{") ? decode.json(text) : decode.base64UrlEncoded(text)).executeAsync()
        try await run(payload, report: &report)
    }

    func run(_ payload: OutOfBandPayload, report: inout DeviceReport) async throws {
        switch try await client.operations.outOfBandOperation.payload(payload).executeAsync() {
        case .registration(let registration):
            let username = registration.username ?? "?"
            try await registration.deviceInformation(device.deviceInformation).authenticatorSelector(selector)
                .pinEnroller(answers.pinEnroller).passwordEnroller(answers.passwordEnroller)
                .biometricUserVerifier(answers.osVerifier).devicePasscodeUserVerifier(answers.osVerifier).fingerprintUserVerifier(answers.osVerifier)
                .executeAsync()
            reportRegistration(username: username, report: &report)
        case .authentication(let authentication):
            var approved = true
            do {
                _ = try await authentication.authenticatorSelector(selector).pinUserVerifier(answers.pinVerifier)
                    .passwordUserVerifier(answers.passwordVerifier).biometricUserVerifier(answers.osVerifier)
                    .devicePasscodeUserVerifier(answers.osVerifier).fingerprintUserVerifier(answers.osVerifier).executeAsync()
            } catch {
                // Declined on purpose (deny): the SDK reports the cancellation; the command did what was asked.
                guard !selector.approve, selector.shownUsername != nil, Self.isCancellation(error) else { throw error }
                approved = false
            }
            reportAuthentication(approved: approved, report: &report)
        case .deregistration(let usernames):
            report["operation"] = "deregistration"
            report["usernames"] = usernames
            report.line("deregistered \(usernames.joined(separator: ", ")) as the server asked")
        }
    }

    static func isCancellation(_ error: any Error) -> Bool {
        guard let error = error as? OperationError, case .FidoError(.userCanceled, _) = error else { return false }
        return true
    }

    private func reportAuthentication(approved: Bool, report: inout DeviceReport) {
        let username = selector.shownUsername ?? "?"
        report["operation"] = "authentication"
        report["username"] = username
        report["approved"] = approved
        if let text = selector.shownTransaction {
            report["transaction"] = text
            report.line("transaction shown: \(DeviceScreen.oneLine(text))")
        }
        if approved {
            report["aaid"] = selector.chosenAaid ?? ""
            report.line("approved for \(username) with \(DeviceAuthenticatorKind.of(selector.chosenAaid ?? "?"))")
        } else {
            report.line("denied for \(username): nothing was signed")
        }
    }

    func authCloudRegistration(appLink: String?, enrollResponse: String?, report: inout DeviceReport) async throws {
        var registration = client.operations.authCloudApiRegistration
        if let appLink { registration = registration.appLinkUri(appLink) }
        if let enrollResponse { registration = registration.enrollResponse(enrollResponse) }
        try await registration.deviceInformation(device.deviceInformation).authenticatorSelector(selector)
            .pinEnroller(answers.pinEnroller).passwordEnroller(answers.passwordEnroller)
            .biometricUserVerifier(answers.osVerifier).devicePasscodeUserVerifier(answers.osVerifier).executeAsync()
        reportRegistration(username: selector.shownUsername ?? "?", how: " (Auth Cloud enrollment)", report: &report)
    }

    /// What every kind of registration reports: the user, the authenticator the selector chose, the server.
    func reportRegistration(username: String, how: String = "", report: inout DeviceReport) {
        let aaid = selector.chosenAaid ?? "?"
        report["operation"] = "registration"
        report["username"] = username
        report["aaid"] = selector.chosenAaid ?? ""
        report.line("registered \(username) with \(DeviceAuthenticatorKind.of(aaid)) (\(aaid)) on \(device.profile.server)\(how)")
    }
}

// MARK: - Subcommands

/// Approves or denies one out-of-band operation: from a QR image or payload, or else the newest pending one.
struct OutOfBandDecision {
    let approve: Bool

    func run(
        options: DeviceOptions, answers: HeadlessAnswers, kind: DeviceAuthenticatorKind?, source: PayloadOptions, index: Int?
    ) async throws -> DeviceReport {
        let scanned = try source.scannedText()
        let device = try HeadlessDevice.open(options)
        let selector = HeadlessSelector(kind: kind, approve: approve)
        return try await answers.explaining(selector: selector) {
            try await device.withClient { client in
                var report = DeviceReport()
                let runner = OutOfBandRunner(device: device, client: client, selector: selector, answers: answers)
                if let scanned {
                    try await runner.run(scanned, enrolling: false, report: &report)
                    return report
                }
                let pending = await client.operations.pendingOutOfBandOperations.executeAsync()
                if let error = pending.errors.first {
                    throw DeviceCommandError("fetching pending operations failed: \(DeviceFailureText.describe(error))")
                }
                let operations = pending.operations.sorted { $0.creationTime < $1.creationTime }
                guard !operations.isEmpty else { throw DeviceCommandError("no pending operation (and no --qr-image or --payload)") }
                let position = index ?? operations.count
                guard (1...operations.count).contains(position) else { throw DeviceCommandError("--index must be 1...\(operations.count)") }
                report["pending"] = operations.count
                let operation = operations[position - 1]
                if approve { try await checkSecretFirst(client: client, answers: answers, kind: kind, operation: operation) }
                try await runner.run(operation.payload, report: &report)
                return report
            }
        }
    }

    /// Without a terminal nobody can be asked again, and the SDK would end a redeemed operation as "cancelled" on a
    /// wrong PIN: the relying party would read a decline that nobody made. So a PIN or password given for a pending
    /// operation is checked on the device first, as the authenticator checks it (a wrong one counted, a cool-down
    /// honoured); a wrong one stops the command before the operation is opened, and it stays pending while it
    /// lives. On a terminal the person is asked again instead, as a phone does.
    private func checkSecretFirst(
        client: any MobileAuthenticationClient, answers: HeadlessAnswers, kind: DeviceAuthenticatorKind?,
        operation: PendingOutOfBandOperation
    ) async throws {
        guard !standardInputIsTerminal, let username = operation.username, operation.operationKind == .authentication else { return }
        let secret: ChangedSecret
        let given: String
        switch (kind, answers.pin, answers.password) {
        case (.pin, let pin?, _), (nil, let pin?, _): (secret, given) = (.pin, pin)
        case (.password, _, let password?), (nil, nil, let password?): (secret, given) = (.password, password)
        default: return
        }
        let name = secret.name
        let stillPending = "nothing was sent: the operation stays pending until it expires, approve it again with the right \(name)"
        switch try await client.checkKnowledge(secret.factor, username: username, secret: given) {
        case .rejected(let state):
            let left = secret.attemptsLeft(state)
            let wait = state.remainingCoolDown > 0 ? "; the next attempt is possible in \(state.remainingCoolDown) s" : ""
            throw DeviceCommandError("wrong \(name)\(left)\(wait); \(stillPending)")
        case .coolingDown(let state):
            throw DeviceCommandError("the \(name) is cooling down after wrong attempts: try again in \(state.remainingCoolDown) s; \(stillPending)")
        case .verified, .lockedOut, .notEnrolled, nil:
            // Right, or nothing a retry could mend: the operation runs, and the SDK tells the server what happened.
            return
        }
    }
}
