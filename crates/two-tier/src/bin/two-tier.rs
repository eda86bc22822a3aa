//! `url-dedup-two-tier`: runs one node of the two-tier dedup protocol of document 001.
//!
//! ```text
//! url-dedup-two-tier --topology system.json center --ip 10.1.0.254   # a network's center
//! url-dedup-two-tier --topology system.json center --ip 10.2.0.254   # the other network's
//! url-dedup-two-tier --topology system.json host --ip 10.1.0.1       # a local host
//! url-dedup-two-tier --topology system.json discover --ip 10.1.0.1 https://example.com/
//! url-dedup-two-tier --topology system.json finish --ip 10.1.0.1 https://example.com/
//! url-dedup-two-tier --topology system.json tasks --ip 10.1.0.1
//! url-dedup-two-tier demo --hosts 3 --urls 2000                      # two networks, one process
//! ```
//!
//! Roles run until Ctrl-C. `RUST_LOG` sets the log level (default `info`).

use std::net::IpAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};
use tokio::sync::watch;
use url_dedup_two_tier::{Center, Error, LocalHost, Settings, Topology};

#[derive(Parser)]
#[command(
    version,
    about = "Run a node of the two-tier URL dedup protocol (document 001) over Redis"
)]
struct Cli {
    /// The system's topology: JSON `{"namespace": .., "networks": [{"center": {"ip", "redis"}, "hosts": [..]}]}`.
    #[arg(long, global = true)]
    topology: Option<PathBuf>,
    /// URLs per frame a host submits.
    #[arg(long, global = true, default_value_t = 1000)]
    urls_per_frame: usize,
    /// Milliseconds a center waits for its hosts' answers.
    #[arg(long, global = true, default_value_t = 2000)]
    lan_timeout_ms: u64,
    /// Milliseconds a center waits for other networks' answers.
    #[arg(long, global = true, default_value_t = 5000)]
    wan_timeout_ms: u64,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a network's center (it also answers the other networks' centers).
    Center {
        /// The center's address in the topology.
        #[arg(long)]
        ip: IpAddr,
    },
    /// Run a local host: local dedup, submissions, answers.
    Host {
        /// The host's address in the topology.
        #[arg(long)]
        ip: IpAddr,
    },
    /// Add URLs to a host's URL_pool.
    Discover {
        /// The host.
        #[arg(long)]
        ip: IpAddr,
        /// The URLs.
        urls: Vec<String>,
    },
    /// Record URLs as crawled in a host's finish_URL.
    Finish {
        /// The host.
        #[arg(long)]
        ip: IpAddr,
        /// The URLs.
        urls: Vec<String>,
    },
    /// Take URLs from a host's task_pool and print them.
    Tasks {
        /// The host.
        #[arg(long)]
        ip: IpAddr,
        /// Most URLs to take.
        #[arg(long, default_value_t = 100)]
        max: usize,
    },
    /// Two networks in one process, each node on a throwaway redis-server.
    #[cfg(feature = "testing")]
    Demo {
        /// Hosts per network.
        #[arg(long, default_value_t = 3)]
        hosts: usize,
        /// URLs each host discovers.
        #[arg(long, default_value_t = 1000)]
        urls: usize,
    },
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> Result<(), Error> {
    let settings = Settings {
        urls_per_frame: cli.urls_per_frame,
        lan_timeout: Duration::from_millis(cli.lan_timeout_ms),
        wan_timeout: Duration::from_millis(cli.wan_timeout_ms),
        ..Settings::default()
    };
    let topology = || -> Result<Topology, Error> {
        let path = cli
            .topology
            .as_ref()
            .ok_or_else(|| Error::Topology("--topology FILE is required".into()))?;
        let text =
            std::fs::read(path).map_err(|e| Error::Topology(format!("{}: {e}", path.display())))?;
        if text.len() > 16 << 20 {
            return Err(Error::Topology(format!(
                "{}: larger than 16 MiB",
                path.display()
            )));
        }
        serde_json::from_slice(&text)
            .map_err(|e| Error::Topology(format!("{}: {e}", path.display())))
    };
    match cli.command {
        Command::Center { ip } => {
            let center = Center::connect(&topology()?, ip, settings).await?;
            tracing::info!(%ip, "center running; Ctrl-C stops it");
            until_ctrl_c(|stop| async move { center.run(stop).await }).await
        }
        Command::Host { ip } => {
            let host = LocalHost::connect(&topology()?, ip, settings).await?;
            tracing::info!(%ip, "host running; Ctrl-C stops it");
            until_ctrl_c(|stop| async move { host.run(stop).await }).await
        }
        Command::Discover { ip, urls } => {
            let host = LocalHost::connect(&topology()?, ip, settings).await?;
            let added = host.discover(&urls).await?;
            println!("{added} new in URL_pool");
            Ok(())
        }
        Command::Finish { ip, urls } => {
            let host = LocalHost::connect(&topology()?, ip, settings).await?;
            host.finish(&urls).await?;
            Ok(())
        }
        Command::Tasks { ip, max } => {
            let host = LocalHost::connect(&topology()?, ip, settings).await?;
            for url in host.take_tasks(max).await? {
                println!("{url}");
            }
            Ok(())
        }
        #[cfg(feature = "testing")]
        Command::Demo { hosts, urls } => demo(hosts, urls, settings).await,
    }
}

async fn until_ctrl_c<F, Fut>(role: F) -> Result<(), Error>
where
    F: FnOnce(watch::Receiver<bool>) -> Fut,
    Fut: std::future::Future<Output = Result<(), Error>> + Send + 'static,
{
    let (stop, stopped) = watch::channel(false);
    let mut running = tokio::spawn(role(stopped));
    let failed = |e: tokio::task::JoinError| Error::Topology(format!("role task failed: {e}"));
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {
            tracing::info!("stopping");
            let _ = stop.send(true);
        }
        done = &mut running => return done.map_err(failed)?,
    }
    running.await.map_err(failed)?
}

#[cfg(feature = "testing")]
async fn demo(hosts: usize, urls: usize, settings: Settings) -> Result<(), Error> {
    use url_dedup_two_tier::testing::Cluster;

    let Some(mut cluster) = Cluster::launch(&[hosts, hosts], settings).await? else {
        return Err(Error::Topology("no redis-server binary on PATH".into()));
    };
    println!(
        "{}",
        serde_json::to_string_pretty(cluster.topology()).unwrap_or_default()
    );
    cluster.start_all().await?;
    let start = std::time::Instant::now();
    // What the protocol should hand out: every found URL that no host had crawled, once per
    // host that found it. It checks found URLs against crawled ones only, so a URL that several
    // hosts find before any of them crawls it passes once for each of them.
    let mut expected = std::collections::BTreeSet::new();
    let mut expected_copies = 0;
    for net in 0..2 {
        for h in 0..hosts {
            let host = cluster.local_host(cluster.host_ip(net, h)).await?;
            // Every host finds a shared part and a part of its own; every fifth URL of the
            // shared part was crawled by some host of the other network.
            let found: Vec<String> = (0..urls)
                .map(|i| {
                    if i % 2 == 0 {
                        format!("https://shared.example/{i}")
                    } else {
                        format!("https://n{net}h{h}.example/{i}")
                    }
                })
                .collect();
            let crawled: Vec<&String> = found
                .iter()
                .filter(|u| u.ends_with("0") && u.contains("shared"))
                .collect();
            let other = cluster.local_host(cluster.host_ip(1 - net, h)).await?;
            other.finish(&crawled).await?;
            let uncrawled = found.iter().filter(|u| !crawled.contains(u));
            expected_copies += uncrawled.clone().count();
            expected.extend(uncrawled.cloned());
            host.discover(&found).await?;
        }
    }
    let idle = cluster.wait_idle(Duration::from_secs(120)).await?;
    let tasks = cluster.all_tasks().await?;
    let unique: std::collections::BTreeSet<_> = tasks.iter().cloned().collect();
    let stats = cluster.stats();
    let shared = expected
        .iter()
        .filter(|u| u.starts_with("https://shared.example/"))
        .count();
    println!("idle: {idle}");
    println!(
        "task pools: {} URLs, {} distinct ({} expected: each URL found and not crawled, once)",
        tasks.len(),
        unique.len(),
        expected.len()
    );
    println!(
        "repeats: {} ({} expected: the protocol compares found URLs with crawled ones only, so \
         each of the {shared} uncrawled shared URLs, found by all {} hosts, passes once per host)",
        tasks.len() - unique.len(),
        expected_copies - expected.len(),
        2 * hosts
    );
    println!("{stats:?}; {:.2?}", start.elapsed());
    cluster.shutdown().await
}
