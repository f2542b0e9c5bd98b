import Foundation

/// Reads QR codes with zbarimg (Debian's zbar-tools), as a phone's camera would: the one place `mauth device
/// --qr-image`, `mauth demo` and the tests call the independent decoder.
public enum QRCodeReader {
    public static let probe = ["zbarimg", "--version"]
    /// zbarimg's options: the payload only, as bytes, of QR codes only. zbarimg otherwise looks for every kind of
    /// barcode, and can find a linear one (an Interleaved 2 of 5 number) in a QR code's modules, which it prints
    /// right after the QR payload. `Tests/Browser/demo_site_test.py` passes the same options.
    public static let arguments = ["--quiet", "--raw", "-Sdisable", "-Sqrcode.enable", "-Sqrcode.binary"]
    public static var isInstalled: Bool { (try? ExternalProgram.run(probe).status) == 0 }

    /// The text of the QR code in `png`. `--raw` prints the payload only; binary mode keeps zbar from guessing a
    /// text encoding. Only QR codes are looked for (``arguments``).
    public static func read(png: [UInt8]) throws -> String {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("qr-\(UUID().uuidString).png")
        try Data(png).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let output = try ExternalProgram.run(["zbarimg"] + arguments + [file.path])
        guard output.status == 0 else { throw ExternalProgram.Failure(failureReason(status: output.status, stderr: output.stderr)) }
        return output.stdout.hasSuffix("\n") ? String(output.stdout.dropLast()) : output.stdout
    }

    /// Why zbarimg read nothing, from its exit status (zbarimg(1): 2 the image could not be processed, 4 no code
    /// was found) and whatever it said; `--quiet` keeps it silent when it simply finds no code.
    static func failureReason(status: Int32, stderr: String) -> String {
        let said = stderr.trimmingCharacters(in: .whitespacesAndNewlines)
        let reason: String
        switch status {
        case 4: reason = "no QR code was found in the image"
        case 2: reason = "the image could not be read (is it a PNG?)"
        default: reason = "zbarimg failed (exit status \(status))"
        }
        return said.isEmpty ? reason : "\(reason): \(said)"
    }
}
