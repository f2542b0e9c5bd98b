import ArgumentParser
import Foundation
import MobileAuthentication

/// `mauth device`: a persistent headless FIDO UAF device in a directory, driven from a shell or a CI job against any
/// nevisFIDO-compatible server. Each subcommand opens the device, runs one SDK operation and exits: 0 when it did
/// what was asked, 1 when it did not (the reason on standard error, and in the JSON with `--json`).
struct DeviceCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "device",
        abstract: "A headless FIDO UAF device kept in a directory: register, authenticate, approve, deregister from a shell.",
        discussion: """
            Every subcommand takes --dir (or MAUTH_DEVICE_DIR) and --json. PINs and passwords come from --pin/--password, \
            from MAUTH_DEVICE_PIN/MAUTH_DEVICE_PASSWORD (new ones: --new-pin/--new-password, MAUTH_DEVICE_NEW_PIN/\
            MAUTH_DEVICE_NEW_PASSWORD), or from a prompt when standard input is a terminal.
            """,
        subcommands: [
            DeviceInit.self, DeviceTrust.self, DeviceRegister.self, DeviceAuthenticate.self, DevicePending.self, DeviceApprove.self, DeviceDeny.self,
            DeviceList.self, DeviceChangePin.self, DeviceChangePassword.self, DeviceDeregister.self, DeviceCheck.self, DeviceSync.self,
            DevicePasskey.self,
        ])
}

// MARK: - The device on disk
