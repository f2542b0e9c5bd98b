import ArgumentParser
import Foundation
import MobileAuthentication

struct DevicePending: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pending", abstract: "List the operations waiting for this device on its server (approve or deny them with those commands).")
    @OptionGroup var options: DeviceOptions

    func run() async throws {
        try await runDeviceCommand("pending", json: options.json) {
            let device = try HeadlessDevice.open(options)
            return try await device.withClient { client in
                let pending = await client.operations.pendingOutOfBandOperations.executeAsync()
                if let error = pending.errors.first { throw DeviceCommandError("fetching pending operations failed: \(DeviceFailureText.describe(error))") }
                let formatter = ISO8601DateFormatter()
                let operations = pending.operations.sorted { $0.creationTime < $1.creationTime }
                var report = DeviceReport()
                report["operations"] = operations.enumerated().map { index, operation in
                    ["index": index + 1, "createdAt": formatter.string(from: operation.creationTime), "dispatcher": operation.dispatcherName,
                     "server": operation.server.baseUrl.absoluteString] as [String: Any]
                }
                report.line(operations.isEmpty ? "no pending operation" : "\(operations.count) pending operation(s):")
                for (index, operation) in operations.enumerated() {
                    report.line("  \(index + 1). \(formatter.string(from: operation.creationTime)) by \(operation.dispatcherName)")
                }
                return report
            }
        }
    }
}
