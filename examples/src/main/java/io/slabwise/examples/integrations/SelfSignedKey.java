package io.slabwise.examples.integrations;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.CertificateEncodingException;
import java.security.cert.X509Certificate;
import java.util.Base64;
import java.util.concurrent.TimeUnit;

/**
 * A private key and its self-signed certificate for {@code localhost} and
 * {@code 127.0.0.1}, made by the running JDK's own {@code keytool}, so that
 * neither BouncyCastle nor the JDK's internal certificate classes are needed
 * (Netty's {@code SelfSignedCertificate} uses one or the other, depending on
 * the Netty version and JDK).
 *
 * <p>Frameworks that take PEM text (Spring Boot's
 * {@code spring.ssl.bundle.pem.*} properties) get it from {@link #privateKeyPem()}
 * and {@link #certificatePem()}.
 *
 * @param privateKey  the EC (P-256) private key
 * @param certificate its certificate, valid for two days
 */
public record SelfSignedKey(PrivateKey privateKey, X509Certificate certificate) {

    private static final String ALIAS = "server";

    /**
     * Generates a key and certificate in a temporary PKCS#12 key store, reads
     * them and deletes the store.
     *
     * @throws IOException when keytool cannot run or fails
     * @throws GeneralSecurityException when the key store cannot be read
     * @throws InterruptedException when interrupted while keytool runs
     */
    public static SelfSignedKey generate() throws IOException, GeneralSecurityException, InterruptedException {
        Path dir = Files.createTempDirectory("slabwise-tls");
        Path store = dir.resolve("key.p12");
        String password = "slabwise-example";
        try {
            Path keytool = Path.of(System.getProperty("java.home"), "bin", "keytool");
            Process process = new ProcessBuilder(keytool.toString(), "-genkeypair", "-alias", ALIAS,
                    "-keyalg", "EC", "-groupname", "secp256r1", "-sigalg", "SHA256withECDSA",
                    "-dname", "CN=localhost", "-ext", "SAN=dns:localhost,ip:127.0.0.1", "-validity", "2",
                    "-storetype", "PKCS12", "-keystore", store.toString(), "-storepass", password, "-keypass", password)
                    .redirectErrorStream(true).start();
            String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!process.waitFor(60, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                throw new IOException("keytool did not finish in 60 s: " + output);
            }
            if (process.exitValue() != 0) {
                throw new IOException("keytool failed (" + process.exitValue() + "): " + output);
            }
            KeyStore keyStore = KeyStore.getInstance("PKCS12");
            try (InputStream in = Files.newInputStream(store)) {
                keyStore.load(in, password.toCharArray());
            }
            return new SelfSignedKey((PrivateKey) keyStore.getKey(ALIAS, password.toCharArray()),
                    (X509Certificate) keyStore.getCertificate(ALIAS));
        } finally {
            Files.deleteIfExists(store);
            Files.deleteIfExists(dir);
        }
    }

    /** The private key as PEM text: its PKCS#8 encoding, in a {@code PRIVATE KEY} block. */
    public String privateKeyPem() {
        return pem("PRIVATE KEY", privateKey.getEncoded());
    }

    /** The certificate as PEM text: its DER encoding, in a {@code CERTIFICATE} block. */
    public String certificatePem() {
        try {
            return pem("CERTIFICATE", certificate.getEncoded());
        } catch (CertificateEncodingException e) {
            throw new IllegalStateException("a certificate keytool made cannot be encoded", e);
        }
    }

    private static String pem(String label, byte[] der) {
        String base64 = Base64.getMimeEncoder(64, new byte[] {'\n'}).encodeToString(der);
        return "-----BEGIN " + label + "-----\n" + base64 + "\n-----END " + label + "-----\n";
    }
}
