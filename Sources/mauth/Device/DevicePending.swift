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
                if let error = pending.errors.first {
                    throw DeviceCommandError("fetching pending operations failed: \(DeviceFailureText.describe(error))")
                }
                let formatter = ISO8601DateFormatter()
                let operations = pending.operations.sorted { $0.creationTime < $1.creationTime }
                var report = DeviceReport()
                report["operations"] = operations.enumerated().map { index, operation in
                    var entry: [String: Any] = [
                        "index": index + 1, "createdAt": formatter.string(from: operation.creationTime),
                        "dispatcher": operation.dispatcherName, "server": operation.server.baseUrl.absoluteString,
                    ]
                    entry["operation"] = operation.operationKind?.rawValue
                    entry["username"] = operation.username
                    entry["transaction"] = operation.transactionText
                    return entry
                }
                report.line(operations.isEmpty ? "no pending operation" : "\(operations.count) pending operation(s):")
                // Each as the phone's list shows it: when and how it came, then whom and what it is for, the
                // transaction rendered as the approval will show it.
                for (index, operation) in operations.enumerated() {
                    let screen = DeviceScreen.lines(
                        username: operation.username, operation: operation.operationKind, transaction: operation.transactionText)
                    report.line("  \(index + 1). \(formatter.string(from: operation.creationTime)) by \(operation.dispatcherName): \(screen[0])")
                    screen.dropFirst().forEach { report.line("     \($0)") }
                }
                return report
            }
        }
    }
}
