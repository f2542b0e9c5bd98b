import ArgumentParser
import Foundation
import MobileAuthentication

struct DeviceCheck: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "check", abstract: "Compare the device information with what the server holds.")
    @OptionGroup var options: DeviceOptions

    func run() async throws {
        try await runDeviceCommand("check", json: options.json) {
            let device = try HeadlessDevice.open(options)
            return try await device.withClient { client in
                let result = await client.operations.deviceInformationCheck.executeAsync()
                if let error = result.errors.first { throw DeviceCommandError("the check failed: \(DeviceFailureText.describe(error))") }
                var report = DeviceReport()
                report["mismatches"] = result.mismatches.map { String(describing: $0) }
                report.line(result.mismatches.isEmpty ? "in sync with the server" : "\(result.mismatches.count) mismatch(es):")
                result.mismatches.forEach { report.line("  \($0)") }
                return report
            }
        }
    }
}

struct DeviceSync: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync", abstract: "Repair what `check` finds: the server and the device agree afterwards.")
    @OptionGroup var options: DeviceOptions

    func run() async throws {
        try await runDeviceCommand("sync", json: options.json) {
            let device = try HeadlessDevice.open(options)
            return try await device.withClient { client in
                let check = await client.operations.deviceInformationCheck.executeAsync()
                if let error = check.errors.first { throw DeviceCommandError("the check failed: \(DeviceFailureText.describe(error))") }
                var report = DeviceReport()
                report["repaired"] = check.mismatches.map { String(describing: $0) }
                guard !check.mismatches.isEmpty else {
                    report.line("nothing to repair: in sync with the server")
                    return report
                }
                let sync = await client.operations.deviceInformationSync.mismatches(check.mismatches).executeAsync()
                if let error = sync.errors.first { throw DeviceCommandError("the sync failed: \(DeviceFailureText.describe(error))") }
                report.line("repaired \(check.mismatches.count) mismatch(es)")
                return report
            }
        }
    }
}
