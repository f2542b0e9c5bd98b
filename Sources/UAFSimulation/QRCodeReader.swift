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
        guard output.status == 0 else { throw ExternalProgram.Failure("zbarimg could not decode the QR code: \(output.stderr)") }
        return output.stdout.hasSuffix("\n") ? String(output.stdout.dropLast()) : output.stdout
    }
}
