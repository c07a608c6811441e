// A Redisson 4.7.0 process for ferrolock's interop tests: one RedissonClient per
// URL given as an argument, driven by lines on stdin, answering one line each.
//
//   redlock NAME WAIT_MS    RedissonRedLock over NAME on every server: "ok" or "busy"
//   multilock NAME WAIT_MS  RedissonMultiLock, the same way
//   unlock                  releases what the last command took: "ok"
//   quit
//
// Everything runs on the main thread: Redisson's locks belong to the thread that took them.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.redisson.Redisson;
import org.redisson.RedissonMultiLock;
import org.redisson.RedissonRedLock;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

public class Interop {
    public static void main(String[] args) throws Exception {
        List<RedissonClient> clients = new ArrayList<>();
        for (String url : args) {
            Config config = new Config();
            config.setLockWatchdogTimeout(3000);
            config.useSingleServer().setAddress(url);
            clients.add(Redisson.create(config));
        }
        System.out.println("ready");
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        RLock held = null;
        String line;
        while ((line = in.readLine()) != null) {
            String[] w = line.trim().split(" ");
            String reply;
            try {
                switch (w[0]) {
                    case "redlock":
                    case "multilock": {
                        RLock[] members = new RLock[clients.size()];
                        for (int i = 0; i < members.length; i++) {
                            members[i] = clients.get(i).getLock(w[1]);
                        }
                        RLock lock = w[0].equals("redlock") ? new RedissonRedLock(members) : new RedissonMultiLock(members);
                        boolean got = lock.tryLock(Long.parseLong(w[2]), -1, TimeUnit.MILLISECONDS);
                        if (got) {
                            held = lock;
                        }
                        reply = got ? "ok" : "busy";
                        break;
                    }
                    case "unlock":
                        held.unlock();
                        held = null;
                        reply = "ok";
                        break;
                    case "quit":
                        for (RedissonClient c : clients) {
                            c.shutdown();
                        }
                        System.out.println("bye");
                        System.out.flush();
                        return;
                    default:
                        reply = "error unknown command " + w[0];
                }
            } catch (Exception e) {
                reply = "error " + e;
            }
            System.out.println(reply);
            System.out.flush();
        }
    }
}
